"""A report: a title, and sections of cited sentences (the answer first, open points last), as
plain data; its `[Sx]`-marked text and its Markdown with `[^n]` footnotes.

A sentence is a `runner.grounding.footnotes.FootnotedSentence` whose sources are `ReportSource`s, so the
Markdown is the digest's footnoted Markdown: one numbering by first appearance, each source once.
The registry numbers sources by the same walk, so footnote `[^n]` is source `Sn`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from runner.core.markdown_text import escape_inline
from runner.grounding.footnotes import FootnotedSentence, Section, footnoted_markdown
from runner.reports.sources import ReportSource, SourceRegistry, registry_of

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

    def sentences(self) -> Iterator[ReportSentence]:
        """Every sentence in reading order."""
        for section in self.sections:
            yield from section.sentences

    def registry(self) -> SourceRegistry:
        """The cited sources numbered `S1..Sn` by first appearance; uncited ones are absent."""
        return registry_of(sentence.sources for sentence in self.sentences())


def marked_sentence(sentence: ReportSentence, registry: SourceRegistry) -> str:
    """`text [S1][S3]`: the sentence with the ids of its sources, each once, in its order."""
    ids: dict[str, None] = {}
    for source in sentence.sources:
        identifier = registry.find_by_key(source.key)
        if identifier is not None:
            ids.setdefault(identifier, None)
    return sentence.sentence + "".join(f" [{identifier}]" for identifier in ids)


def report_markdown(report: Report) -> str:
    """`# title`, the sections with `[^n]` markers, then one footnote per cited source."""
    title = f"# {escape_inline(report.title)}"
    if not any(True for _ in report.sentences()):
        return f"{title}\n\n{NO_EVIDENCE_NOTE}"
    return f"{title}\n\n{footnoted_markdown(report.sections)}"
