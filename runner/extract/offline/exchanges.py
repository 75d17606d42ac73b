"""A conversation told as an exchange: the message its title quotes and the first answer in it,
the pair an overview (and each period of a multi-day window) tells in a sentence or two."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from runner.core.window import WindowMessage
from runner.extract.offline.importance import is_bot, is_noise
from runner.extract.offline.threads import Participants, find_answer
from runner.extract.offline.topics import RankedConversation


class WindowReading(Protocol):
    """What telling an exchange needs of a window: its messages in order, their positions, the
    messages by id and who takes part."""

    @property
    def messages(self) -> Sequence[WindowMessage]: ...

    @property
    def order(self) -> Mapping[str, int]: ...

    @property
    def by_id(self) -> Mapping[str, WindowMessage]: ...

    @property
    def participants(self) -> Participants: ...


@dataclass(frozen=True)
class Reading:
    """A `WindowReading` of plain messages (the reduce step's merger is one of its own)."""

    messages: Sequence[WindowMessage]
    order: Mapping[str, int]
    by_id: Mapping[str, WindowMessage]
    participants: Participants

    @classmethod
    def of(cls, messages: Sequence[WindowMessage]) -> Reading:
        return cls(
            messages=messages,
            order={m.message_id: i for i, m in enumerate(messages)},
            by_id={m.message_id: m for m in messages},
            participants=Participants.of(messages),
        )


def exchange(
    reading: WindowReading, conversation: RankedConversation
) -> tuple[WindowMessage, WindowMessage | None] | None:
    """A conversation's opening (its topic's quoted title) and first answer."""
    topic = conversation.topic
    opening = reading.by_id.get(topic.message_ids[0]) if topic.message_ids else None
    if opening is None:
        return None
    answer = find_answer(
        reading.messages,
        reading.order[opening.message_id],
        reading.participants,
        opening.normalized_text,
    )
    if answer is not None and (
        is_noise(answer.message.normalized_text)
        or is_bot(answer.message.author, answer.message.normalized_text)
    ):
        answer = None  # "thanks!" or a bot's factoid is no answer worth quoting
    return opening, answer.message if answer else None
