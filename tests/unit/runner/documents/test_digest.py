"""Document digests end to end on the real fixtures: every page and PDF digests with all
locators verified or fails with a clear reason; the query shapes evidence, summary and key
points; long documents compress by more than half; output is deterministic; raw content never
leaks into the payload or the logs."""

from __future__ import annotations

import json
import logging
from functools import cache

import pytest

from runner.documents.canonical import CanonicalDocument, source_text_hash
from runner.documents.digest import (
    digest_document,
    digest_document_offline,
    public_metadata,
)
from runner.documents.errors import ExtractionError, PayloadError
from runner.documents.ingest import ingest_bytes, ingest_text
from runner.documents.locators import resolve_locator
from runner.documents.payload import deserialize_payload
from runner.documents.policy import DigestConfig
from runner.documents.terms import query_terms, tokens
from tests.support.documents import (
    HTML_DIR,
    PDF_DIR,
    PDF_PASSWORDS,
    docs_file,
    html_pages,
    pdf_files,
)

# What each PDF fixture does without a password (with it, see PDF_PASSWORDS).
PDF_FAILURES = {
    "tricky_encrypted_libreoffice-writer-password.pdf": "encrypted",
    "tricky_fax_scan_no_text_CCITTFaxDecode.pdf": "no_text_layer",
    "tricky_image_only_no_text_layer.pdf": "no_text_layer",
}
QUERY = "What does the document say about its main topic?"


@cache
def _html(page: str) -> CanonicalDocument:
    return ingest_bytes(docs_file(HTML_DIR / page / "source.html").read_bytes(), "text/html")


@cache
def _pdf(name: str, password: str | None = None) -> CanonicalDocument:
    return ingest_bytes(docs_file(PDF_DIR / name).read_bytes(), None, password=password)


def _assert_grounded(document: CanonicalDocument, payload_json: str) -> None:
    payload = deserialize_payload(payload_json)  # validates against the schema on read
    assert payload.source_text_hash == source_text_hash(document.canonical_text)
    for snippet in payload.evidence_snippets:
        start, end = resolve_locator(snippet.locator, document.canonical_text, document.page_spans)
        assert document.canonical_text[start:end] == snippet.text
        if document.page_spans is not None:
            assert snippet.locator.startswith("page:")


@pytest.mark.parametrize("page", html_pages() or ["(no data)"])
def test_every_html_page_digests_with_verified_locators(page: str) -> None:
    document = _html(page)
    outcome = digest_document_offline(document, QUERY, source_id=page)
    _assert_grounded(document, outcome.payload_json)
    assert outcome.payload.summary and outcome.payload.evidence_snippets


@pytest.mark.parametrize("name", pdf_files() or ["(no data)"])
def test_every_pdf_digests_with_verified_locators_or_fails_clearly(name: str) -> None:
    docs_file(PDF_DIR / name)
    if name in PDF_FAILURES:
        with pytest.raises(ExtractionError) as caught:
            _pdf(name)
        assert caught.value.code == PDF_FAILURES[name] and caught.value.reason
        return
    document = _pdf(name)
    outcome = digest_document_offline(document, QUERY, source_id="pdf")
    _assert_grounded(document, outcome.payload_json)
    assert outcome.payload.evidence_snippets


def test_decrypted_pdf_digests() -> None:
    name = "tricky_encrypted_libreoffice-writer-password.pdf"
    document = _pdf(name, PDF_PASSWORDS[name])
    outcome = digest_document_offline(document, "lorem ipsum dolor", source_id="enc")
    _assert_grounded(document, outcome.payload_json)


def test_two_queries_give_different_evidence_summary_and_key_points() -> None:
    document = _html("wikipedia")
    history = digest_document_offline(
        document, "Netscape history of the Mozilla project", source_id="w"
    )
    firefox = digest_document_offline(
        document, "Firefox browser market share releases", source_id="w"
    )
    a, b = history.payload, firefox.payload
    assert {s.locator for s in a.evidence_snippets}.isdisjoint(
        s.locator for s in b.evidence_snippets
    )
    assert a.summary != b.summary and len(set(a.key_points) & set(b.key_points)) <= 2
    assert a.query_hash != b.query_hash and history.cache_key != firefox.cache_key
    # The query really shapes the key points: each one uses at least one query term.
    for payload, query in (
        (a, "Netscape history of the Mozilla project"),
        (b, "Firefox browser market share releases"),
    ):
        wanted = set(query_terms(query))
        assert payload.key_points and all(wanted & set(tokens(p)) for p in payload.key_points)


LONG_DOCUMENTS = {
    "google-sre-book-1": "alerting and paging on symptoms",
    "ietf-1": "bearer token authorization for storage requests",
    "lwn-1": "Arduino trademark dispute",
    "wikipedia": "Firefox browser releases",
    "acl19irc.pdf": "annotation of IRC conversation disentanglement",
    "pdflatex-4-pages.pdf": "text meaning",
    "tricky_scanned_ocr_Seige_of_Vicksburg.pdf": "siege of Vicksburg",
}


@pytest.mark.parametrize(("source", "query"), sorted(LONG_DOCUMENTS.items()))
def test_long_documents_compress_by_more_than_half(source: str, query: str) -> None:
    document = _pdf(source) if source.endswith(".pdf") else _html(source)
    assert len(document.canonical_text) > 10_000
    outcome = digest_document_offline(document, query, source_id="long")
    payload = outcome.payload
    assert payload.compression_ratio < 0.5
    assert payload.digest_chars == len(payload.summary) + sum(map(len, payload.key_points)) + sum(
        len(s.text) for s in payload.evidence_snippets
    )
    fidelity = outcome.fidelity
    assert fidelity.level == "digest" and fidelity.final_tokens < fidelity.original_tokens / 2
    assert len(payload.summary) <= 2000 and len(payload.key_points) <= 10
    assert len(payload.evidence_snippets) == 5 and all(
        len(s.text) <= 400 for s in payload.evidence_snippets
    )


def test_same_input_same_output() -> None:
    document = _pdf("acl19irc.pdf")
    first = digest_document_offline(document, "annotation agreement", source_id="a")
    second = digest_document_offline(document, "annotation agreement", source_id="a")
    assert first.payload_json == second.payload_json and first.cache_key == second.cache_key


def test_config_shapes_the_evidence() -> None:
    document = _html("google-sre-book-1")
    none = digest_document_offline(
        document, QUERY, source_id="s", config=DigestConfig(include_evidence=False)
    )
    assert none.payload.evidence_snippets == []
    short = digest_document_offline(
        document,
        "latency",
        source_id="s",
        config=DigestConfig(max_evidence_snippets=2, evidence_max_chars=150),
    )
    assert len(short.payload.evidence_snippets) == 2
    assert all(len(s.text) <= 150 for s in short.payload.evidence_snippets)
    assert short.cache_key != none.cache_key


async def test_async_digest_equals_the_offline_one() -> None:
    document = _html("lwn-1")
    awaited = await digest_document(document, "Arduino trademark", source_id="lwn")
    assert (
        awaited.payload_json
        == digest_document_offline(document, "Arduino trademark", source_id="lwn").payload_json
    )


def test_a_tampered_document_is_refused() -> None:
    document = ingest_text("Some text about caching and latency, long enough to digest.")
    tampered = CanonicalDocument(
        **{**document.__dict__, "canonical_text": document.canonical_text + "!"}
    )
    with pytest.raises(PayloadError) as caught:
        digest_document_offline(tampered, "caching", source_id="t")
    assert caught.value.code == "hash_mismatch"


def test_raw_content_never_reaches_payload_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    secret = "ZEBRAFISH-CONFIDENTIAL-PARAGRAPH"
    text = (
        "\n\n".join(
            f"Paragraph {i} covers caching strategy number {i} in some detail for readers."
            for i in range(60)
        )
        + f"\n\n{secret} is a private remark without any query term in it at all."
    )
    document = ingest_text(text)
    metadata = {
        "_raw_content": text,
        "_digest_archive_hash": document.source_text_hash,
        "title": "t",
    }
    with caplog.at_level(logging.DEBUG):
        outcome = digest_document_offline(document, "caching strategy", source_id="raw")
    assert secret not in outcome.payload_json and "_raw_content" not in outcome.payload_json
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "digest.completed" in logged and secret not in logged and "Paragraph 1 " not in logged
    assert public_metadata(metadata) == {"title": "t"}
    assert "_raw_content" not in json.dumps(public_metadata(metadata))
