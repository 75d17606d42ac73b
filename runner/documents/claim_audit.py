"""The citation audit of a document digest: which of its claims (summary sentences, key points)
rest on its evidence snippets, and how many claims were dropped and why.

A document digest carries no per-claim citations: its evidence snippets are its citations (each
an exact, verified quote of the canonical text). A claim cites a snippet when the snippet holds
at least `DEFAULT_MIN_OVERLAP` of the claim's content words (`runner.grounding.claim_support`, the rule
the chat validator applies to a sentence and its messages). The offline summarizer copies
sentences verbatim but may take them from outside the evidence (the document's opening
sentence), and the LLM summarizer's summary is not checked when it is written, so a kept claim
may cite nothing: the audit counts those rather than hiding them.

What the write path drops is recorded in the digest's warnings (the LLM summarizer drops a key
point below its support threshold with one `unsupported_key_point` warning each, and the
map-reduce of a large document a summary sentence its cited passages do not support with one
`unsupported_summary_sentence` each), so the audit
is computed from the stored digest alone: the same stored row gives the same figures, and
digests stored before this audit existed get one too. The JSON has the shape of a channel
digest's `citation_audit` (`schema.types.prose.CitationAudit.from_json` reads both).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runner.documents.prose import sentence_spans
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP, share_in, token_set

SUMMARY, KEY_POINTS = "summary", "key_points"
# The warnings of the write path that stand for one dropped claim each, by field.
DROP_WARNINGS = {"unsupported_key_point": KEY_POINTS, "unsupported_summary_sentence": SUMMARY}


@dataclass(frozen=True)
class DocumentClaim:
    field: str  # SUMMARY or KEY_POINTS
    text: str
    evidence: tuple[int, ...]  # indexes of the evidence snippets that support it, in order
    support: float | None  # the best share of its words one snippet holds (None: no content word)


def summary_sentences(summary: str) -> list[str]:
    """The summary's sentences, split as the document path splits canonical text."""
    return [summary[start:end] for start, end in sentence_spans(summary, 0, len(summary))]


def document_claims(
    summary: str, key_points: Iterable[str], snippets: list[str]
) -> list[DocumentClaim]:
    """Each summary sentence, then each key point, with the snippets that support it."""
    snippet_tokens = [token_set([text]) for text in snippets]
    claims: list[DocumentClaim] = []
    for field, texts in ((SUMMARY, summary_sentences(summary)), (KEY_POINTS, list(key_points))):
        for text in texts:
            shares = [share_in(text, tokens) for tokens in snippet_tokens]
            known = [share for share in shares if share is not None]
            evidence = tuple(
                index
                for index, share in enumerate(shares)
                if share is not None and share >= DEFAULT_MIN_OVERLAP
            )
            claims.append(DocumentClaim(field, text, evidence, max(known) if known else None))
    return claims


def document_citation_audit(
    claims: list[DocumentClaim], warnings: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    """The audit's figures: per field proposed / kept / cited, the share of summary sentences
    that cite evidence (None without a summary), and the dropped claims by reason."""
    reasons = Counter(str(w.get("code")) for w in warnings if str(w.get("code")) in DROP_WARNINGS)
    dropped = Counter({field: 0 for field in (SUMMARY, KEY_POINTS)})
    for reason, count in reasons.items():
        dropped[DROP_WARNINGS[reason]] += count
    fields: dict[str, dict[str, int]] = {}
    for field in (SUMMARY, KEY_POINTS):
        kept = [claim for claim in claims if claim.field == field]
        cited = sum(1 for claim in kept if claim.evidence)
        fields[field] = {"proposed": len(kept) + dropped[field], "kept": len(kept), "cited": cited}
    summary = fields[SUMMARY]
    share = summary["cited"] / summary["kept"] if summary["kept"] else None
    return {
        "fields": fields,
        "overview_cited_share": None if share is None else round(share, 4),
        "reasons": dict(sorted(reasons.items())),
        "title_replaced": False,
    }
