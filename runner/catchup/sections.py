"""A catch-up's sections, one per channel, from plain rows: which messages name the person, which
open questions were put to them, which open action items they own, which decisions were said
since, each entry cited by the messages it rests on (for an item, every message its pointers
name, in their order) with a verbatim quote of each; then the channels ranked
(runner/catchup/ranking.py).

A question was put to the person when the message it was asked in names them or replies to a
message of theirs, and they did not ask it. An action item is theirs when its owner is one of
their handles. Open questions and action items are listed however old (they wait until closed);
mentions and decisions only after the start of the catch-up. A message cited by a question put
to them is not listed again as a mention.

Every quote is `text[char_start:char_end]` of the cited message at the revision read: the
sentence naming the person when there is one, else the question's sentence, else (for an item)
the sentence sharing most words with the item's text, else the first, cut at a word to
`MAX_QUOTE_CHARS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from runner.catchup.handles import Handles
from runner.catchup.ranking import KIND_ORDER, EntryKind, Rankable, ranked, score
from runner.grounding.citations import cut_span, sentence_spans
from runner.grounding.claim_support import share_in, token_set

MAX_QUOTE_CHARS = 200


@dataclass(frozen=True)
class SaidMessage:
    """A message as read: its row, external id, author, time, revision and text."""

    row_id: int
    channel_id: int
    message_id: str
    author: str
    at: datetime
    revision: int
    text: str


@dataclass(frozen=True)
class WeighedItem:
    """A tracked item a catch-up weighs, with the message it was first said in (None: gone)
    and every message its pointers name, in their order (`cites`; empty: only `said_in`)."""

    id: int
    channel_id: int
    kind: str
    status: str
    text: str
    owner: str | None
    said_at: datetime
    said_in: SaidMessage | None
    replied_author: str | None
    cites: tuple[SaidMessage, ...] = ()


@dataclass(frozen=True)
class Citation:
    """The message an entry rests on and the exact characters quoted from it."""

    row_id: int
    message_id: str
    author: str
    at: datetime
    revision: int
    char_start: int
    char_end: int
    quote: str


@dataclass(frozen=True)
class Entry:
    kind: EntryKind
    text: str  # the item's text; for a mention, the quote
    at: datetime
    citations: tuple[Citation, ...]
    item_id: int | None = None
    status: str | None = None
    owner: str | None = None


@dataclass(frozen=True)
class ChannelInfo:
    channel_id: int
    name: str
    server_name: str | None
    since: datetime  # where this channel's catch-up starts


@dataclass(frozen=True)
class ChannelSection:
    channel: ChannelInfo
    entries: tuple[Entry, ...]
    counts: dict[EntryKind, int] = field(default_factory=dict)

    @property
    def score(self) -> int:
        return score(self.counts)


def quote_span(
    text: str, mentions: Sequence[tuple[int, int]], question: bool, about: str = ""
) -> tuple[int, int]:
    """What to quote of a message (see the module docstring)."""
    spans = sentence_spans(text) or [(0, len(text))]
    chosen = spans[0]
    if about and len(spans) > 1:
        # The sentence that says most of the item: a decision's quote is the decision, not the
        # greeting before it.
        shares = [share_in(about, token_set([text[start:end]])) or 0.0 for start, end in spans]
        best = max(range(len(spans)), key=lambda index: (shares[index], -index))
        if shares[best] > 0:
            chosen = spans[best]
    if mentions:
        at = mentions[0][0]
        chosen = next((s for s in spans if s[0] <= at < s[1]), (at, mentions[0][1]))
        if chosen[1] - chosen[0] > MAX_QUOTE_CHARS:
            chosen = (max(chosen[0], at - MAX_QUOTE_CHARS // 2), chosen[1])
    elif question:
        chosen = next((s for s in spans if "?" in text[s[0] : s[1]]), chosen)
    return cut_span(text, chosen[0], chosen[1], MAX_QUOTE_CHARS)


def citation(message: SaidMessage, span: tuple[int, int]) -> Citation:
    start, end = span
    return Citation(
        message.row_id,
        message.message_id,
        message.author,
        message.at,
        message.revision,
        start,
        end,
        message.text[start:end],
    )


def _item_entry(item: WeighedItem, kind: EntryKind, handles: Handles) -> Entry:
    """The item's entry, citing each message its pointers name (in their order, each once)."""
    said = item.cites or ((item.said_in,) if item.said_in is not None else ())
    cited: list[Citation] = []
    seen: set[int] = set()
    for message in said:
        if not message.text or message.row_id in seen:
            continue
        seen.add(message.row_id)
        named = handles.mentions(item.channel_id, message.text)
        span = quote_span(message.text, named, kind == EntryKind.QUESTION, item.text)
        if span[1] > span[0]:
            cited.append(citation(message, span))
    return Entry(kind, item.text, item.said_at, tuple(cited), item.id, item.status, item.owner)


def _item_kind(item: WeighedItem, handles: Handles) -> EntryKind | None:
    """Which entry an item makes for the person, or None when it is not theirs to see."""
    channel = item.channel_id
    if item.kind == "decision":
        return EntryKind.DECISION
    if item.status != "open":
        return None
    if item.kind == "action_item":
        return EntryKind.ACTION_ITEM if handles.is_person(channel, item.owner) else None
    if item.kind != "question" or item.said_in is None:
        return None
    asker = item.owner or item.said_in.author
    if handles.is_person(channel, asker) or handles.is_person(channel, item.said_in.author):
        return None
    named = bool(handles.mentions(channel, item.said_in.text))
    replied = handles.is_person(channel, item.replied_author)
    return EntryKind.QUESTION if named or replied else None


def sections(
    handles: Handles,
    channels: dict[int, ChannelInfo],
    messages: Sequence[SaidMessage],
    items: Sequence[WeighedItem],
) -> list[ChannelSection]:
    """The channels with anything for the person, ranked, each with its entries (questions,
    action items, mentions, decisions; newest first within a kind)."""
    entries: dict[int, list[Entry]] = {}
    cited_by_questions: set[int] = set()
    for item in items:
        if item.channel_id not in channels:
            continue
        kind = _item_kind(item, handles)
        if kind is None:
            continue
        if kind == EntryKind.DECISION and item.said_at <= channels[item.channel_id].since:
            continue
        entry = _item_entry(item, kind, handles)
        if kind == EntryKind.QUESTION and item.said_in is not None:
            cited_by_questions.add(item.said_in.row_id)
        entries.setdefault(item.channel_id, []).append(entry)
    for message in messages:
        channel = channels.get(message.channel_id)
        if channel is None or message.at <= channel.since or message.row_id in cited_by_questions:
            continue
        if handles.is_person(message.channel_id, message.author):
            continue  # one's own words ask nothing of one
        named = handles.mentions(message.channel_id, message.text)
        if not named:
            continue
        cited = citation(message, quote_span(message.text, named, question=False))
        entries.setdefault(message.channel_id, []).append(
            Entry(EntryKind.MENTION, cited.quote, message.at, (cited,))
        )
    found: list[ChannelSection] = []
    for channel_id, listed in entries.items():
        listed.sort(key=lambda e: (KIND_ORDER[e.kind], -e.at.timestamp(), e.item_id or 0))
        counts: dict[EntryKind, int] = {}
        for entry in listed:
            counts[entry.kind] = counts.get(entry.kind, 0) + 1
        found.append(ChannelSection(channels[channel_id], tuple(listed), counts))
    order = ranked(
        [
            Rankable(section.channel.name, section.counts, max(e.at for e in section.entries))
            for section in found
        ]
    )
    return [found[i] for i in order]


@dataclass(frozen=True)
class CatchUp:
    """A person's catch-up: who (`person_id` None: nobody of that name is stored yet, their name
    is their one handle), the handle keys matched, where it starts (`since`: as asked, None: each
    channel's read marker, else `default_since`), and the channels, the most needing first.
    `truncated`: more candidates existed than were read, the oldest are left out."""

    person: str
    person_id: int | None
    handles: tuple[str, ...]
    since: datetime | None
    default_since: datetime
    generated_at: datetime
    channels: tuple[ChannelSection, ...]
    truncated: bool = False
