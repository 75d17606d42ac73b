"""A report: a title, and sections of cited sentences (the answer first, open points last), as
plain data; its `[Sx]`-marked text and its Markdown with `[^n]` footnotes.

A sentence is a `runner.grounding.footnotes.FootnotedSentence` whose sources are the spans it
cites (`ReportSource`s). The registry numbers the sources (a message, a document, a URL: each
once, however many of its spans are cited) by first appearance in reading order, and footnote
`[^n]` is source `Sn`; the Markdown ends with the `## Sources` list and one footnote per source
listing its cited spans (`runner.reports.footnotes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from runner.core.markdown_text import escape_inline
from runner.grounding.footnotes import FootnotedSentence, Section, marked_blocks
from runner.reports.footnotes import footnote_lines, footnote_numbers, sources_list
from runner.reports.sources import (
    ReportSource,
    SourceRegistry,
    SourceScores,
    registry_of_sections,
)

ReportSentence = FootnotedSentence[ReportSource]
ReportSection = Section[ReportSource]

ANSWER_HEADING = "Answer"
OPEN_POINTS_HEADING = "Open points"
NO_EVIDENCE_NOTE = "_No passage of the chosen sources matches the question._"


@dataclass(frozen=True)
class Report:
    question: str
    title: str
    sections: tuple[ReportSection, ...]
    # Each cited source's credibility and relevance by canonical key (`runner.reports.
    # source_scores`); empty until the job scores them, or for a report stored before scores.
    scores: Mapping[str, SourceScores] = field(default_factory=dict, compare=False)

    def sentences(self) -> Iterator[ReportSentence]:
        """Every sentence in reading order."""
        for section in self.sections:
            yield from section.sentences

    def registry(self) -> SourceRegistry:
        """The cited sources numbered `S1..Sn` by first appearance, each with its spans and
        the sections citing it and its scores; uncited ones are absent."""
        return registry_of_sections(self.sections, self.scores)


def marked_sentence(sentence: ReportSentence, registry: SourceRegistry) -> str:
    """`text [S1][S3]`: the sentence with the ids of its sources, each once, in its order."""
    ids: dict[str, None] = {}
    for source in sentence.sources:
        identifier = registry.find_by_key(source.key)
        if identifier is not None:
            ids.setdefault(identifier, None)
    return sentence.sentence + "".join(f" [{identifier}]" for identifier in ids)


def report_markdown(report: Report, registry: SourceRegistry | None = None) -> str:
    """`# title`, the sections with `[^n]` markers, the `## Sources` list, then one footnote
    per cited source with its spans. `registry`: the report's own, when the caller has it."""
    title = f"# {escape_inline(report.title)}"
    if not any(True for _ in report.sentences()):
        return f"{title}\n\n{NO_EVIDENCE_NOTE}"
    registry = registry or report.registry()
    blocks = marked_blocks(report.sections, footnote_numbers(registry))
    return "\n\n".join([title, *blocks, sources_list(registry), footnote_lines(registry)])
