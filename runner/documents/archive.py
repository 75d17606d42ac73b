"""Opt-in archive of canonical texts, so a digest's citations can be verified later.

Layout: `{archive_dir}/{source_id}/{hex}.txt` where `hex` is the 64-hex SHA-256 of the UTF-8
canonical text (the `sha256:` prefix of `source_text_hash` is left out of the file name because `:`
is not portable in paths). Directories are created 0o700 and files 0o600: archived documents may be
private. A file is written to a temporary name and renamed, so a reader never sees half a text.
Files older than the retention period are pruned.

Verification: the archived bytes hash to the payload's `source_text_hash`, and every locator slices
the archived text to its snippet (page locators use page spans recomputed from the text's page
markers).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

from runner.documents.canonical import page_spans_from_text, source_text_hash
from runner.documents.errors import ArchiveError, LocatorError
from runner.documents.payload import DigestPayload
from runner.documents.verify import verify_payload_against_text

DEFAULT_RETENTION_DAYS = 30
_SAFE_SOURCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_ARCHIVE_FILE = re.compile(r"[0-9a-f]{64}\.txt")


def archive_path(archive_dir: str | Path, source_id: str, text_hash: str) -> Path:
    """Where the canonical text with `text_hash` ("sha256:<hex>") of `source_id` is archived."""
    if not _SAFE_SOURCE_ID.fullmatch(source_id) or ".." in source_id:
        raise ArchiveError("bad_source_id", "a source id must be 1-128 of [A-Za-z0-9._-]")
    prefix, _, digest = text_hash.partition(":")
    if prefix != "sha256" or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ArchiveError("bad_hash", "source_text_hash must be 'sha256:<64 hex>'")
    return Path(archive_dir) / source_id / f"{digest}.txt"


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)  # mkdir's mode is masked by the umask; the archive must stay private


def write_archive(archive_dir: str | Path, source_id: str, canonical_text: str) -> Path:
    """Archive `canonical_text` (idempotent: an existing identical file is left as it is)."""
    target = archive_path(archive_dir, source_id, source_text_hash(canonical_text))
    _private_dir(Path(archive_dir))
    _private_dir(target.parent)
    data = canonical_text.encode("utf-8")
    if (
        target.exists()
        and hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()
    ):
        os.chmod(target, 0o600)
        return target
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def read_archive(archive_dir: str | Path, source_id: str, text_hash: str) -> str:
    """The archived canonical text, checked against its hash."""
    path = archive_path(archive_dir, source_id, text_hash)
    try:
        data = path.read_bytes()  # bytes: no newline translation may touch the offsets
    except FileNotFoundError:
        raise ArchiveError("missing", f"no archived text for {source_id}") from None
    if "sha256:" + hashlib.sha256(data).hexdigest() != text_hash:
        raise ArchiveError(
            "hash_mismatch", f"the archived text of {source_id} does not match its hash"
        )
    return data.decode("utf-8")


def verify_archive(archive_dir: str | Path, source_id: str, payload: DigestPayload) -> None:
    """Raise `ArchiveError` unless the archive satisfies the verification contract."""
    text = read_archive(archive_dir, source_id, payload.source_text_hash)
    paged = any(snippet.locator.startswith("page:") for snippet in payload.evidence_snippets)
    try:
        verify_payload_against_text(payload, text, page_spans_from_text(text) if paged else None)
    except LocatorError as error:
        raise ArchiveError(error.code, error.reason) from None


def prune_archive(
    archive_dir: str | Path,
    retention_days: float = DEFAULT_RETENTION_DAYS,
    *,
    now: float | None = None,
) -> list[Path]:
    """Delete archived texts last written more than `retention_days` ago (and source folders
    left empty). Only files named like archives are touched; symlinks are not followed."""
    root = Path(archive_dir)
    if not root.is_dir():
        return []
    cutoff = (time.time() if now is None else now) - retention_days * 86_400
    removed: list[Path] = []
    for folder in sorted(root.iterdir()):
        if folder.is_symlink() or not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_symlink() or not _ARCHIVE_FILE.fullmatch(path.name):
                continue
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
        if not any(folder.iterdir()):
            folder.rmdir()
    return removed
