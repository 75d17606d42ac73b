"""A Slack export as the zip file Slack hands out, unpacked into a folder the Slack importer reads.

The zip comes from the outside, so unpacking is bounded and never leaves the folder: at most
`MAX_ENTRIES` members and `MAX_UNPACKED_BYTES` in all, counted from the bytes actually
inflated (a member's declared size may lie); a member whose name is absolute, climbs out
(`..`), or is a symbolic link is skipped and named, never written; only regular files and
folders are made. The export's root is the folder holding `channels.json` (the zip's top or its
one top folder). Anything else is `UnusableInput`, saying why.
"""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from runner.importers.inputs import UnusableInput
from runner.importers.slack import CONVERSATION_FILES

MAX_ENTRIES = 50_000
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024
ZIP_MAGIC = b"PK\x03\x04"


@dataclass
class Unpacked:
    root: Path
    skipped: list[str] = field(default_factory=list)  # "name: why", for the import's report


def is_zip(head: bytes) -> bool:
    return head.startswith(ZIP_MAGIC)


def _safe_parts(name: str) -> tuple[str, ...] | None:
    """The member's path parts inside the folder, or None when it would leave it."""
    if "\\" in name or name.startswith("/") or "\x00" in name:
        return None
    parts = tuple(part for part in PurePosixPath(name).parts if part not in ("", "."))
    if not parts or ".." in parts or ":" in parts[0]:
        return None
    return parts


def unpack_slack_zip(source: BinaryIO, folder: Path, shown: str) -> Unpacked:
    """Unpack the zip `source` into `folder` (empty, private); `shown` names it in errors."""
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as error:
        raise UnusableInput(f"{shown} is not a readable zip file ({error})") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ENTRIES:
            raise UnusableInput(f"{shown} holds {len(members):,} files, over {MAX_ENTRIES:,}")
        skipped: list[str] = []
        budget = MAX_UNPACKED_BYTES
        for member in members:
            parts = _safe_parts(member.filename)
            mode = member.external_attr >> 16
            if parts is None:
                skipped.append(f"{member.filename[:200]}: a path leading outside the export")
                continue
            if stat.S_ISLNK(mode):
                skipped.append(f"{member.filename[:200]}: a symbolic link")
                continue
            target = folder.joinpath(*parts)
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with archive.open(member) as inflated, target.open("xb") as out:
                    while chunk := inflated.read(_CHUNK):
                        budget -= len(chunk)
                        if budget < 0:
                            raise UnusableInput(
                                f"{shown} unpacks to over {MAX_UNPACKED_BYTES // (1024 * 1024)} "
                                "MB: unpack it yourself and run `digestd import FOLDER`"
                            )
                        out.write(chunk)
            except FileExistsError:
                skipped.append(f"{member.filename[:200]}: a second file of the same name")
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as error:
                # Encrypted, an unknown compression, a bad checksum: that member only.
                skipped.append(f"{member.filename[:200]}: cannot be unpacked ({error})")
    return Unpacked(root=_export_root(folder, shown), skipped=skipped)


def _export_root(folder: Path, shown: str) -> Path:
    """The folder holding channels.json: the zip's top, or its one top folder."""

    def holds_metadata(candidate: Path) -> bool:
        return any((candidate / name).is_file() for name in CONVERSATION_FILES)

    if holds_metadata(folder):
        return folder
    tops = [p for p in folder.iterdir() if p.is_dir() and p.name != "__MACOSX"]
    if len(tops) == 1 and holds_metadata(tops[0]):
        return tops[0]
    raise UnusableInput(
        f"{shown} is a zip without channels.json at its top (or in its one top folder): "
        "not a Slack export"
    )
