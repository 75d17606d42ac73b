"""Archive of canonical texts: layout, private permissions, retention, and the verification contract
(hash of the archive, every locator slices to its snippet)."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import replace
from pathlib import Path

import pytest

from runner.documents.archive import (
    archive_path,
    prune_archive,
    read_archive,
    verify_archive,
    write_archive,
)
from runner.documents.digest import digest_document_offline
from runner.documents.errors import ArchiveError
from runner.documents.ingest import ingest_bytes, ingest_text
from runner.documents.locators import resolve_locator
from runner.documents.payload import EvidenceSnippet
from tests.support.documents import PDF_DIR, docs_file

TEXT = "\n\n".join(
    f"Paragraph {i}: the archive keeps canonical text so that quotes about topic {i % 3} "
    "can be verified long after the digest was written."
    for i in range(40)
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_layout_and_private_permissions(tmp_path: Path) -> None:
    document = ingest_text(TEXT)
    old_umask = os.umask(0o022)
    try:
        path = write_archive(tmp_path / "archive", "doc-1", document.canonical_text)
    finally:
        os.umask(old_umask)
    hex_digest = document.source_text_hash.split(":")[1]
    assert path == tmp_path / "archive" / "doc-1" / f"{hex_digest}.txt"
    assert (
        _mode(path) == 0o600 and _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
    )
    assert hashlib.sha256(path.read_bytes()).hexdigest() == hex_digest
    assert (
        write_archive(tmp_path / "archive", "doc-1", document.canonical_text) == path
    )  # idempotent
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left


def test_verification_contract_for_text_and_pdf(tmp_path: Path) -> None:
    text_document = ingest_text(TEXT)
    pdf_document = ingest_bytes(docs_file(PDF_DIR / "acl19irc.pdf").read_bytes(), "application/pdf")
    for source_id, document, query in (
        ("text-1", text_document, "verified quotes topic 2"),
        ("pdf-1", pdf_document, "annotated IRC messages conversation graph"),
    ):
        outcome = digest_document_offline(document, query, source_id=source_id)
        write_archive(tmp_path, source_id, document.canonical_text)
        verify_archive(tmp_path, source_id, outcome.payload)
        archived = read_archive(tmp_path, source_id, outcome.payload.source_text_hash)
        # The verification contract's hash check, spelled out.
        digest = hashlib.sha256(archived.encode()).hexdigest()
        assert digest == outcome.payload.source_text_hash.split(":")[1]
        for snippet in outcome.payload.evidence_snippets:
            start, end = resolve_locator(snippet.locator, archived, document.page_spans)
            assert archived[start:end] == snippet.text


def test_verification_fails_loudly(tmp_path: Path) -> None:
    document = ingest_text(TEXT)
    payload = digest_document_offline(document, "topic 1 quotes", source_id="d").payload
    with pytest.raises(ArchiveError) as caught:
        verify_archive(tmp_path, "d", payload)
    assert caught.value.code == "missing"
    path = write_archive(tmp_path, "d", document.canonical_text)
    moved = replace(
        payload,
        evidence_snippets=[EvidenceSnippet(payload.evidence_snippets[0].text, "char:1-9", 0.1)],
    )
    with pytest.raises(ArchiveError) as caught:
        verify_archive(tmp_path, "d", moved)
    assert caught.value.code == "locator_mismatch"
    path.write_bytes(path.read_bytes() + b" tampered")
    with pytest.raises(ArchiveError) as caught:
        verify_archive(tmp_path, "d", payload)
    assert caught.value.code == "hash_mismatch"


def test_unsafe_source_ids_are_refused(tmp_path: Path) -> None:
    for source_id in ("../etc", "a/b", "", ".hidden", "x" * 200):
        with pytest.raises(ArchiveError):
            archive_path(tmp_path, source_id, "sha256:" + "0" * 64)


def test_retention_prunes_old_texts(tmp_path: Path) -> None:
    old = write_archive(tmp_path, "old-doc", "old text")
    new = write_archive(tmp_path, "new-doc", "new text")
    (tmp_path / "new-doc" / "notes.md").write_text("not an archive file")
    now = time.time()
    os.utime(old, (now - 31 * 86_400, now - 31 * 86_400))
    removed = prune_archive(tmp_path, retention_days=30, now=now)
    assert removed == [old]
    assert not (tmp_path / "old-doc").exists() and new.exists()
    assert (tmp_path / "new-doc" / "notes.md").exists()
