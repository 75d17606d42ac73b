"""The window a digest read, as the memory rules read it: its messages by id, by conversation and
in time order, who wrote in it, which messages say something is done or cancelled, and the
evidence a change or a new item rests on, checked against it like a digest's pointers.

A change's evidence is the ids of the messages it rests on and, when they say it verbatim, a
pointer; `MemoryWindow.check` resolves it with `runner.grounding.pointers.resolve_pointer`, and
evidence that does not resolve, or that is not later than the item, does not stand.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from runner.core.contract import ContentPointer
from runner.grounding.addressing import LEADING_ADDRESS
from runner.grounding.citations import anchor_span
from runner.grounding.pointers import PointerError, resolve_pointer
from runner.memory.cues import CANCELLED, completion, is_question, marker
from runner.memory.items import NewItem, RuleItem, words

# Knowledge items of one digest may rest on the same message: the one superseding another may
# cite a message as old as the item it supersedes.
SAME_TIME = timedelta(microseconds=1)


@dataclass(frozen=True)
class MemoryMessage:
    """A window message at the revision the digest read, with its conversation."""

    message_id: str
    author: str
    ts: datetime
    text: str
    conversation_id: int | None
    reply_to: str | None = None  # an explicit reply (external id)


@dataclass(frozen=True)
class Evidence:
    message_ids: tuple[str, ...]
    at: datetime
    # The verbatim span (message, start, end, text), resolved against the window.
    pointer: tuple[str, int, int, str] | None


class MemoryWindow:
    """The window's messages by id and by conversation, in time order."""

    def __init__(self, messages: Sequence[MemoryMessage]) -> None:
        self.messages = sorted(messages, key=lambda m: m.ts)
        self.by_id = {m.message_id: m for m in self.messages}
        self.texts = {m.message_id: m.text for m in self.messages}
        self.authors = {m.author.casefold() for m in self.messages}
        # Indexes, so each tracked item costs its conversation's messages, not the window's.
        self.by_conversation: dict[int, list[MemoryMessage]] = {}
        for message in self.messages:
            if message.conversation_id is not None:
                self.by_conversation.setdefault(message.conversation_id, []).append(message)
        # The messages saying something is done (`runner.memory.cues.completion`, of any
        # length: one naming the task may be long) or cancelled (not negated, not a question),
        # with the marker found: computed once, read by every open action item.
        self.markers: dict[str, tuple[re.Match[str] | None, re.Match[str] | None]] = {}
        for message in self.messages:
            done = completion(message.text, short=False)
            cancelled = None if is_question(message.text) else marker(CANCELLED, message.text)
            if done or cancelled:
                self.markers[message.message_id] = (done, cancelled)
        self.marked = [m for m in self.messages if m.message_id in self.markers]
        self.marked_times = [m.ts for m in self.marked]
        self._tokens: dict[str, set[str]] = {}

    def addressee(self, text: str, also: str) -> str | None:
        """Whom a message is addressed to by its first word: an author of the window or
        `also` (casefolded), or None."""
        match = LEADING_ADDRESS.match(text)
        if match is None:
            return None
        name = match.group(1).casefold()
        known = ({also} if also else set()) | self.authors
        return next(
            (a for a in sorted(known) if a == name or (len(name) >= 3 and a.startswith(name))),
            None,
        )

    def conversation_of(self, message_ids: Sequence[str], author: str | None) -> int | None:
        """The conversation of the item's message: the one its owner wrote, else the first."""
        cited = [self.by_id[m] for m in message_ids if m in self.by_id]
        own = [m for m in cited if author is not None and m.author.casefold() == author.casefold()]
        for message in own + cited:
            if message.conversation_id is not None:
                return message.conversation_id
        return None

    def rule_item(self, new: NewItem) -> RuleItem | None:
        """A new digest's item as the rules see it, placed in this window: when it was first
        said, in which conversation; None when it cites nothing of the window."""
        said_at = self.said_at(new.message_ids)
        if said_at is None:
            return None
        first = self.by_id.get(new.message_ids[0]) if new.message_ids else None
        return RuleItem(
            new,
            new.kind,
            new.text,
            new.owner,
            self.conversation_of(new.message_ids, new.owner),
            said_at,
            new.message_ids,
            words(new.text),
            first.text if first else "",
        )

    def said_at(self, message_ids: Sequence[str]) -> datetime | None:
        times = [self.by_id[m].ts for m in message_ids if m in self.by_id]
        return min(times) if times else None

    def in_conversation(self, conversation: int | None, when: datetime) -> list[MemoryMessage]:
        """The conversation's messages after `when`, in time order."""
        if conversation is None:
            return []
        return [m for m in self.by_conversation.get(conversation, ()) if m.ts > when]

    def marked_after(self, when: datetime) -> list[MemoryMessage]:
        """The messages after `when` that say something is done or cancelled."""
        return self.marked[bisect_right(self.marked_times, when) :]

    def tokens(self, message: MemoryMessage) -> set[str]:
        found = self._tokens.get(message.message_id)
        if found is None:
            found = self._tokens[message.message_id] = words(message.text)
        return found

    def evidence(self, message: MemoryMessage, span: tuple[int, int] | None) -> Evidence:
        pointer = None
        if span is not None and span[1] > span[0]:
            start, end = span
            pointer = (message.message_id, start, end, message.text[start:end])
        return Evidence((message.message_id,), message.ts, pointer)

    def claim_evidence(self, text: str, message_ids: Sequence[str]) -> Evidence | None:
        """An item's own citations as evidence: its latest message, the sentence sharing most
        of its words (`text`) as the pointer."""
        cited = [self.by_id[m] for m in message_ids if m in self.by_id]
        if not cited:
            return None
        message = max(cited, key=lambda m: m.ts)
        return Evidence(
            tuple(m.message_id for m in cited),
            message.ts,
            _pointer_of(message, anchor_span(text, message.text)),
        )

    def check(self, evidence: Evidence, since: datetime) -> str | None:
        """Why the evidence does not stand (None: it does), validated like a digest pointer."""
        missing = [m for m in evidence.message_ids if m not in self.texts]
        if missing or not evidence.message_ids:
            return "unknown_message_id"
        if evidence.at <= since:
            return "evidence_before_item"
        if evidence.pointer is not None:
            message_id, start, end, quote = evidence.pointer
            try:
                resolved = resolve_pointer(
                    ContentPointer(
                        message_id=message_id, char_start=start, char_end=end, quote=quote
                    ),
                    self.texts,
                )
            except PointerError:
                return "pointer_unresolved"
            if (resolved.char_start, resolved.char_end) != (start, end):
                return "pointer_unresolved"
        return None


def _pointer_of(message: MemoryMessage, span: tuple[int, int]) -> tuple[str, int, int, str] | None:
    start, end = span
    return (message.message_id, start, end, message.text[start:end]) if end > start else None
