"""The public entry points: `disentangle(messages)` for parents and conversations, and
`explicit_parents` to turn an export's reply ids into the indexes `Message.reply_to` takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from runner.conversations.disentangle.message import Message
from runner.conversations.disentangle.model import LinkModel, link

__all__ = [
    "ChannelRecord",
    "Disentanglement",
    "disentangle",
    "explicit_parents",
    "link",
    "link_records",
]


@dataclass(frozen=True)
class Disentanglement:
    """`parents[i]`: the index of the earlier message message i answers, None when it starts a
    conversation. `conversations`: the connected components, each a list of indexes in channel
    order, ordered by their first message; `conversation_of[i]` is i's position in that list."""

    parents: list[int | None]
    conversations: list[list[int]]
    conversation_of: list[int]


def components(parents: Sequence[int | None]) -> tuple[list[list[int]], list[int]]:
    """Conversations from parents: since every parent is earlier, one left-to-right pass
    suffices (a message joins its parent's conversation)."""
    conversation_of: list[int] = []
    groups: list[list[int]] = []
    for index, parent in enumerate(parents):
        if parent is None or not 0 <= parent < index:
            conversation_of.append(len(groups))
            groups.append([index])
        else:
            group = conversation_of[parent]
            conversation_of.append(group)
            groups[group].append(index)
    return groups, conversation_of


def disentangle(messages: Sequence[Message], model: LinkModel | None = None) -> Disentanglement:
    """Reply structure and conversations of an ordered channel (see `link` for the rules)."""
    parents = link(messages, model)
    groups, conversation_of = components(parents)
    return Disentanglement(parents, groups, conversation_of)


def explicit_parents(ids: Sequence[str], reply_to: Sequence[str | None]) -> list[int | None]:
    """`Message.reply_to` values from an export's own ids: `reply_to[i]` names the message i
    replies to (a Discord reply, a JSONL `reply_to`) or its thread's root (a Slack `thread_ts`).

    Within a thread, a reply answers the thread's previous message in the list (the root for the
    first reply). A reply whose target is not earlier in the list continues the latest earlier
    reply naming the same target, or else has no parent (its thread started outside the window).
    """
    position: dict[str, int] = {}
    latest_reply: dict[str, int] = {}
    parents: list[int | None] = []
    for index, (message_id, target) in enumerate(zip(ids, reply_to, strict=True)):
        parent: int | None = None
        if target is not None:
            parent = latest_reply.get(target, position.get(target))
            latest_reply[target] = index
        parents.append(parent)
        position.setdefault(message_id, index)
    return parents


class ChannelRecord(Protocol):
    """A stored or imported message as the rest of digestd holds it (e.g.
    `runner.conversations.threads.ThreadedMessage`): ids are the export's own."""

    @property
    def message_id(self) -> str: ...
    @property
    def author(self) -> str: ...
    @property
    def ts(self) -> datetime: ...
    @property
    def text(self) -> str: ...
    @property
    def reply_to(self) -> str | None: ...


def link_records(
    records: Sequence[ChannelRecord], model: LinkModel | None = None
) -> list[int | None]:
    """`link` over records carrying export ids and datetimes: explicit replies resolved with
    `explicit_parents`, the rest left to the model. Usable as `runner.conversations.threads`' `Linker`."""
    explicit = explicit_parents([r.message_id for r in records], [r.reply_to for r in records])
    messages = [
        Message(record.author, record.ts.timestamp(), record.text, reply_to=parent)
        for record, parent in zip(records, explicit, strict=True)
    ]
    return link(messages, model)
