"""A stored document digest's evidence as a report's evidence: when a chosen document has a
digest for the report's question, its evidence snippets are the document's units, instead of
the document cut into sentences again (the digest already chose them for that query).

- Which digest (`digest_snippets`): the newest stored digest of the document whose query, as
  the digest cache normalizes it (`runner.documents.cache_key.normalize_query`: NFC, spaces),
  is the question or one of its sub-questions, whose `source_text_hash` is the document's text
  as the report reads it, and which has snippets. A snippet whose locator does not slice the
  canonical text to its text is left out (the digest was made of other text); so is one whose
  span overlaps a snippet already taken: a span is evidence once.
- Units (`snippet_evidence`): the sentences of each snippet (a snippet can hold several, and
  end in the middle of one), quotable as any unit is (`quotable_span`: long enough, cut at
  `MAX_UNIT_CHARS`, no table fragment), each with its locator into the canonical text, in
  document order; a unit's position is its character offset, so the snippets' sentences and
  those the refinement adds read in the document's order.
- The rest of the document (`rest_of_document`): its sentences that overlap no snippet, which
  only the refinement round reads (`runner.reports.refine`), for a part of the question the
  snippets do not answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from runner.documents.cache_key import normalize_query
from runner.documents.errors import LocatorError
from runner.documents.locators import make_locator, parse_locator, resolve_locator, verify_locator
from runner.documents.prose import is_prose, is_table_fragment
from runner.documents.prose import sentence_spans as document_sentence_spans
from runner.reports.evidence import (
    DocumentText,
    Evidence,
    document_evidence,
    quotable_span,
)
from runner.reports.sources import DocumentSource

DIGEST_EVIDENCE_KIND = "digest_evidence"


@dataclass(frozen=True)
class StoredDigest:
    """What a report needs of a stored document digest: its id, query and payload."""

    digest_id: int
    query: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class ChosenDigest:
    digest_id: int
    snippets: tuple[tuple[str, str], ...]  # (locator, text), document order, no overlap
    left_out: int  # snippets that did not slice the text or overlapped a taken one


def _span(document: DocumentText, locator: str) -> tuple[int, int]:
    return resolve_locator(locator, document.canonical_text, document.page_spans)


def digest_snippets(
    document: DocumentText, digests: Iterable[StoredDigest], queries: Iterable[str]
) -> ChosenDigest | None:
    """The snippets of the newest of `digests` (newest first) made for one of `queries` of this
    document's text, checked and without overlaps (module docstring); None if there is none."""
    wanted = {normalize_query(query) for query in queries}
    for digest in digests:
        payload = digest.payload
        if not isinstance(payload, dict) or normalize_query(digest.query) not in wanted:
            continue
        if payload.get("source_text_hash") != document.source_text_hash:
            continue
        found: list[tuple[int, int, str, str]] = []
        left_out = 0
        for snippet in payload.get("evidence_snippets") or []:
            if not isinstance(snippet, dict):
                left_out += 1
                continue
            locator, text = str(snippet.get("locator", "")), str(snippet.get("text", ""))
            try:
                verify_locator(locator, text, document.canonical_text, document.page_spans)
                start, end = _span(document, locator)
            except LocatorError:
                left_out += 1
                continue
            if any(
                start < taken_end and taken_start < end for taken_start, taken_end, _, _ in found
            ):
                left_out += 1
                continue
            found.append((start, end, locator, text))
        if found:
            ordered = tuple((locator, text) for _, _, locator, text in sorted(found))
            return ChosenDigest(digest.digest_id, ordered, left_out)
    return None


def snippet_evidence(document: DocumentText, origin_index: int) -> list[Evidence]:
    """The quotable sentences of the document's digest snippets, in document order (module
    docstring)."""
    text = document.canonical_text
    units: list[Evidence] = []
    for locator, _ in document.snippets:
        start, end = _span(document, locator)
        page = parse_locator(locator).page
        for sentence_start, sentence_end in document_sentence_spans(text, start, end):
            if is_table_fragment(text[sentence_start:sentence_end]):
                continue
            quotable = quotable_span(text, sentence_start, sentence_end)
            if quotable is None:
                continue
            quote = text[quotable[0] : quotable[1]]
            cut = make_locator(text, *quotable, quote, page, document.page_spans)
            source = DocumentSource(
                document.document_id,
                document.title,
                document.source_text_hash,
                cut,
                quote,
                document.url,
            )
            units.append(
                Evidence(
                    quote,
                    source,
                    document.title,
                    origin_index,
                    quotable[0],  # a character offset: the refinement's units interleave by it
                    is_prose(quote),
                    kind=DIGEST_EVIDENCE_KIND,
                    quality=document.quality,
                )
            )
    return units


def rest_of_document(document: DocumentText, origin_index: int) -> list[Evidence]:
    """The sentences of a document with snippets that overlap none of them (nothing for a
    document without): what the refinement round may add of it."""
    if not document.snippets:
        return []
    taken = [_span(document, locator) for locator, _ in document.snippets]
    units = document_evidence(replace(document, snippets=()), origin_index)
    rest = []
    for unit in units:
        assert isinstance(unit.source, DocumentSource)
        start, end = _span(document, unit.source.locator)
        if not any(start < taken_end and taken_start < end for taken_start, taken_end in taken):
            rest.append(replace(unit, position=start))
    return rest
