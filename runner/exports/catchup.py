"""Markdown of a person's catch-up (runner/catchup/sections.py), for `digestd catchup`, exports
and deliveries: one section per channel, the channel that needs the person most first, each
entry followed by footnote markers, then one footnote per cited message (author, time, the exact
words quoted, the message's id and channel), numbered by first appearance like a digest's
(runner.grounding.footnotes). Every stored text (names, item texts, quotes) is escaped with
runner.core.markdown_text.escape_inline: a message cannot add a heading, a footnote or markup.

The same catch-up as an export document (catch_up_document) is what the HTML and JSON files are
rendered from (runner/exports/html.py, json_export.py), footnoted alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from runner.catchup.ranking import EntryKind
from runner.catchup.sections import CatchUp, ChannelSection, Citation, Entry
from runner.core.global_ids import global_id
from runner.core.markdown_text import escape_inline as md
from runner.exports.model import ExportDocument, Footnote, Quote, Section, Sentence
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


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment else None


def _plain_entry(entry: Entry) -> str:
    """An entry's line as plain text (the HTML escapes it): _entry_line's words, unescaped."""
    if entry.kind == EntryKind.MENTION:
        author = entry.citations[0].author if entry.citations else "someone"
        return f"{author}, {_when(entry.at)}: “{entry.text}”"
    owner = f" (asked by {entry.owner})" if entry.kind == EntryKind.QUESTION and entry.owner else ""
    status = f" [{entry.status}]" if entry.kind == EntryKind.DECISION and entry.status else ""
    return f"{entry.text}{owner}{status}"


def catch_up_document(catch_up: CatchUp) -> ExportDocument:
    """The catch-up as an export (runner.exports.model), for the HTML and JSON files: a level-2
    section per channel (its counts), a level-3 one per kind of entry, and one footnote per cited
    message numbered as catch_up_markdown numbers them. Its JSON fields hold the channels in rank
    order with every entry and the numbers of the footnotes citing it."""
    since = (
        f"since {_when(catch_up.since)}"
        if catch_up.since
        else f"since each channel's read marker ({_when(catch_up.default_since)} where none)"
    )
    facts = (
        ("Person", catch_up.person),
        ("Since", since.removeprefix("since ")),
        ("As of", _when(catch_up.generated_at)),
        ("Channels", str(len(catch_up.channels))),
    )
    numbers: dict[str, int] = {}
    first: dict[str, CitedMessage] = {}
    sections: list[Section] = []
    channels: list[dict[str, Any]] = []
    if not catch_up.channels:
        sections.append(
            Section("nothing", None, (Sentence("Nothing waits on you in these channels."),))
        )
    for rank, section in enumerate(catch_up.channels, 1):
        title = channel_title(section)
        sections.append(Section("channel", title, (Sentence(counts_line(section) + "."),)))
        entries: list[dict[str, Any]] = []
        for kind, heading in HEADINGS.items():
            told: list[Sentence] = []
            for entry in (e for e in section.entries if e.kind == kind):
                marks: list[int] = []
                for cited in entry.citations:
                    source = CitedMessage(cited, title)
                    marks.append(numbers.setdefault(source.key, len(numbers) + 1))
                    first.setdefault(source.key, source)
                unique = tuple(dict.fromkeys(marks))
                told.append(Sentence(_plain_entry(entry), unique))
                entries.append(
                    {
                        "kind": entry.kind.name,
                        "text": entry.text,
                        "at": _iso(entry.at),
                        "itemId": global_id("TrackedItem", entry.item_id)
                        if entry.item_id is not None
                        else None,
                        "status": entry.status.upper() if entry.status else None,
                        "owner": entry.owner,
                        "citations": list(unique),
                    }
                )
            if told:
                sections.append(Section(kind.name, heading, tuple(told), bullets=True, level=3))
        channels.append(
            {
                "channelId": global_id("Channel", section.channel.channel_id),
                "channelName": section.channel.name,
                "serverName": section.channel.server_name,
                "since": _iso(section.channel.since),
                "rank": rank,
                "score": section.score,
                "counts": {
                    "questions": section.counts.get(EntryKind.QUESTION, 0),
                    "actionItems": section.counts.get(EntryKind.ACTION_ITEM, 0),
                    "mentions": section.counts.get(EntryKind.MENTION, 0),
                    "decisions": section.counts.get(EntryKind.DECISION, 0),
                    "total": len(section.entries),
                },
                "entries": entries,
            }
        )
    footnotes = tuple(
        Footnote(
            numbers[key],
            "message",
            (Quote(source.citation.quote),),
            author=source.citation.author,
            at=source.citation.at,
            channel=source.channel,
            message_id=source.citation.message_id,
        )
        for key, source in first.items()
    )
    notes = (
        ("Only the newest messages and items were read; older ones are left out.",)
        if catch_up.truncated
        else ()
    )
    return ExportDocument(
        kind="catchup",
        id=global_id("Person", catch_up.person_id) if catch_up.person_id is not None else "",
        row_id=catch_up.person_id or 0,
        title=f"Catch-up for {catch_up.person}",
        created_at=catch_up.generated_at,
        facts=facts,
        sections=tuple(sections),
        footnotes=footnotes,
        notes=notes,
        fields={
            "person": catch_up.person,
            "known": catch_up.person_id is not None,
            "handles": list(catch_up.handles),
            "since": _iso(catch_up.since),
            "defaultSince": _iso(catch_up.default_since),
            "truncated": catch_up.truncated,
            "channels": channels,
        },
    )
