"""Markdown of a person's catch-up (runner/catchup/sections.py), for `digestd catchup`, exports
and deliveries: one section per channel, the channel that needs the person most first, each
entry followed by footnote markers, then one footnote per cited message (author, time, the exact
words quoted, the message's id and channel), numbered by first appearance like a digest's
(runner.grounding.footnotes). Every stored text (names, item texts, quotes) is escaped with
runner.core.markdown_text.escape_inline: a message cannot add a heading, a footnote or markup."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from runner.catchup.ranking import EntryKind
from runner.catchup.sections import CatchUp, ChannelSection, Citation, Entry
from runner.core.markdown_text import escape_inline as md
from runner.grounding.footnotes import footnote_line

HEADINGS = {
    EntryKind.QUESTION: "Questions put to you",
    EntryKind.ACTION_ITEM: "Your open action items",
    EntryKind.MENTION: "Mentions",
    EntryKind.DECISION: "Decisions",
}
COUNT_WORDS = {
    EntryKind.QUESTION: ("open question", "open questions"),
    EntryKind.ACTION_ITEM: ("action item", "action items"),
    EntryKind.MENTION: ("mention", "mentions"),
    EntryKind.DECISION: ("decision", "decisions"),
}


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def channel_title(section: ChannelSection) -> str:
    channel = section.channel
    return f"{channel.server_name} / {channel.name}" if channel.server_name else channel.name


def counts_line(section: ChannelSection) -> str:
    parts = []
    for kind, (one, many) in COUNT_WORDS.items():
        count = section.counts.get(kind, 0)
        if count:
            parts.append(f"{count} {one if count == 1 else many}")
    return ", ".join(parts)


@dataclass(frozen=True)
class CitedMessage:
    """A footnote's source: one message of one channel (external ids repeat across channels)."""

    citation: Citation
    channel: str

    @property
    def key(self) -> str:
        return f"{self.channel}\x00{self.citation.message_id}"

    def footnote_text(self) -> str:
        cited = self.citation
        return (
            f'{md(cited.author)}, {_when(cited.at)}, "{md(cited.quote)}" '
            f"(message {md(cited.message_id)} in {md(self.channel)})"
        )


def _entry_line(entry: Entry, markers: str) -> str:
    text = md(entry.text)
    if entry.kind == EntryKind.MENTION:
        author = md(entry.citations[0].author) if entry.citations else "someone"
        return f"- {author}, {_when(entry.at)}: “{text}”{markers}"
    owner = (
        f" (asked by {md(entry.owner)})" if entry.kind == EntryKind.QUESTION and entry.owner else ""
    )
    status = f" [{md(entry.status)}]" if entry.kind == EntryKind.DECISION and entry.status else ""
    return f"- {text}{owner}{status}{markers}"


def catch_up_markdown(catch_up: CatchUp) -> str:
    """The catch-up as Markdown with numbered footnotes."""
    since = (
        f"since {_when(catch_up.since)}"
        if catch_up.since
        else f"since each channel's read marker ({_when(catch_up.default_since)} where none)"
    )
    blocks = [
        f"# Catch-up for {md(catch_up.person)}",
        f"{since}, as of {_when(catch_up.generated_at)}.",
    ]
    if not catch_up.channels:
        blocks.append("Nothing waits on you in these channels.")
    numbers: dict[str, int] = {}
    first: dict[str, CitedMessage] = {}
    for section in catch_up.channels:
        title = channel_title(section)
        blocks.append(f"## {md(title)}\n\n{md(counts_line(section))}.")
        for kind, heading in HEADINGS.items():
            lines = []
            for entry in (e for e in section.entries if e.kind == kind):
                marks = []
                for cited in entry.citations:
                    source = CitedMessage(cited, title)
                    number = numbers.setdefault(source.key, len(numbers) + 1)
                    first.setdefault(source.key, source)
                    marks.append(f"[^{number}]")
                lines.append(_entry_line(entry, "".join(dict.fromkeys(marks))))
            if lines:
                blocks.append(f"### {heading}\n\n" + "\n".join(lines))
    if catch_up.truncated:
        blocks.append("Only the newest messages and items were read; older ones are left out.")
    if first:
        blocks.append("\n".join(footnote_line(numbers[key], s) for key, s in first.items()))
    return "\n\n".join(blocks) + "\n"
