"""The traceability check of a digest: its `source_text_hash` is the SHA-256 of the canonical text,
and every evidence locator slices that text to exactly the snippet. Used right after a digest is
built, by the archive, and by readers."""

from __future__ import annotations

from runner.documents.canonical import PageSpan, source_text_hash
from runner.documents.errors import LocatorError
from runner.documents.locators import verify_locator
from runner.documents.payload import DigestPayload


def verify_payload_against_text(
    payload: DigestPayload, canonical_text: str, page_spans: list[PageSpan] | None = None
) -> None:
    """Raise `LocatorError` (`hash_mismatch`, `locator_mismatch`, ...) unless the payload is
    traceable to `canonical_text`."""
    if source_text_hash(canonical_text) != payload.source_text_hash:
        raise LocatorError(
            "hash_mismatch", "the text's sha256 is not the payload's source_text_hash"
        )
    for index, snippet in enumerate(payload.evidence_snippets):
        try:
            verify_locator(snippet.locator, snippet.text, canonical_text, page_spans)
        except LocatorError as error:
            raise LocatorError(error.code, f"evidence_snippets/{index}: {error.reason}") from None
