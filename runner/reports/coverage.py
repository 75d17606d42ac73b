"""Which chosen sources a report says nothing about, and why: every channel and document asked
for gets a section of the report or a warning naming the reason, so none vanishes silently.

The reasons, checked in this order for a source the report cites nothing of:
- `window_empty`: the channel has no message in the report's time range (a document, no text);
- `nothing_quotable`: it has text, but no sentence long enough to quote on its own;
- `no_match`: no sentence of it names the question's words (`runner.reports.evidence.rank_evidence`);
- `not_cited`: some of its sentences matched, but the writer chose others or the citation audit
  dropped what it wrote from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.report import Report

_REASONS = {
    "window_empty": "has nothing in the report's range",
    "nothing_quotable": "has no sentence long enough to quote",
    "no_match": "has no sentence that names the question's words",
    "not_cited": "has matching sentences, but others answered the question better",
}


@dataclass(frozen=True)
class ChosenSource:
    """A channel or document the report was asked to read, in the order of its evidence
    (`Evidence.origin_index`): channels first, then documents."""

    kind: str  # "channel" or "document"
    source_id: int
    name: str  # the channel's name or the document's title
    empty: bool  # no message in the range; a document without text


def _label(source: ChosenSource) -> str:
    name = source.name if len(source.name) <= 80 else source.name[:79] + "…"
    return f"{source.kind} {source.source_id} ({name!r})"


def missing_sections(
    sources: list[ChosenSource],
    units: list[Evidence],
    ranked: list[RankedEvidence],
    report: Report,
) -> list[dict[str, Any]]:
    """A `no_section` warning for each chosen source the report cites nothing of, with why."""
    # By span, not by source: near-duplicate documents are one source, each its own origin.
    origin_of: dict[str, int] = {}
    for unit in units:
        for cited_source in unit.sources:
            origin_of.setdefault(cited_source.span_key, unit.origin_index)
    cited = {
        origin_of.get(span.span_key)
        for entry in report.registry().entries()
        for span in entry.spans
    }
    quotable = {unit.origin_index for unit in units}
    matched = {item.evidence.origin_index for item in ranked}
    warnings: list[dict[str, Any]] = []
    for index, source in enumerate(sources):
        if index in cited:
            continue
        if source.empty:
            reason = "window_empty"
        elif index not in quotable:
            reason = "nothing_quotable"
        elif index not in matched:
            reason = "no_match"
        else:
            reason = "not_cited"
        warnings.append(
            {
                "code": "no_section",
                "phase": "write",
                "reason": reason,
                "kind": source.kind,
                "source_id": source.source_id,
                "message": f"{_label(source)} {_REASONS[reason]}: the report has no section on it",
            }
        )
    return warnings
