"""Opening import inputs safely: only regular files are read, and only in the encoding we parse.

Opening a FIFO blocks until a writer appears and `/dev/zero` never ends, so every importer
opens through `open_regular`: `O_NONBLOCK` makes the open itself return at once, `fstat` on the
opened descriptor (not a check before it, which a swap could defeat) refuses anything but a
regular file, and the descriptor is switched back to blocking reads. `UnusableInput` is the
error for an input that cannot be imported at all (the CLI exits 2 on it); it is a
`ValueError`, as the format detector's other refusals are.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

from runner.errors import InputError


class UnusableInput(InputError, ValueError):
    """The input as a whole cannot be imported: missing, a special file, unsafe, undecodable."""


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def describe(path: Path) -> str | None:
    """Why `path` is not a readable regular file ("does not exist", "is a FIFO (named pipe)",
    "is a folder", ...), or None when it is one. Follows symbolic links."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "is a broken symbolic link" if path.is_symlink() else "does not exist"
    except PermissionError:
        return "cannot be read (permission denied)"
    except OSError as error:
        return f"cannot be read ({error.strerror or type(error).__name__})"
    kind = _kind(mode)
    return None if kind is None else f"is {kind}"


def open_regular(path: Path, shown_as: str | None = None) -> BinaryIO:
    """`path` opened for binary reading; `UnusableInput` naming it (as `shown_as`, default the
    path) unless it is a regular file. Never blocks on a FIFO, never reads a device."""
    name = shown_as or str(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as error:
        raise UnusableInput(f"{name} does not exist") from error
    except OSError as error:
        raise UnusableInput(f"{name} cannot be read ({error.strerror})") from error
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise UnusableInput(f"{name} is {kind}, not a regular file: refusing to read it")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def encoding_problem(path: Path, head: bytes) -> str | None:
    """Why a file whose first bytes are `head` is not UTF-8 text we can parse (with what to do),
    or None. UTF-16/32 are recognized by their byte order mark or by NUL bytes between ASCII
    characters; converting is left to the user (one iconv) rather than guessed here."""
    found: tuple[str, str] | None = None
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        found = ("UTF-32", "it starts with a UTF-32 byte order mark")
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        found = ("UTF-16", "it starts with a UTF-16 byte order mark")
    else:
        sample = head[:4096]
        half = len(sample) / 2
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        if len(sample) >= 8 and max(even, odd) > 0.3 * half and min(even, odd) < 0.05 * half:
            found = ("UTF-16", "NUL bytes between its characters")
    if found is None:
        return None
    encoding, evidence = found
    return (
        f"looks like {encoding} ({evidence}); digestd reads UTF-8: convert it first, e.g. "
        f"`iconv -f {encoding} -t UTF-8 '{path.name}' > '{path.stem}.utf8{path.suffix}'`"
    )


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, symbolic links resolved, lies within `root` (already resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop
        return False
