"""A conversation told as an exchange: the message that says what it is about (its title's, or
the problem a follow-up title follows) and the first answer in it, the pair an overview (and
each period of a multi-day window) tells in a sentence or two."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from runner.core.window import WindowMessage
from runner.extract.offline.importance import echo_question, informative_opening, is_bot, is_noise
from runner.extract.offline.threads import Participants, find_answer, strip_address
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


def opening_of(reading: WindowReading, conversation: RankedConversation) -> WindowMessage | None:
    """The message that tells what a conversation is about: its title's message, or, when that
    is a follow-up put to someone ("Oer: approx how much is it downloading at the last 3%?"),
    the conversation's first message if its opener wrote it and it asks or states the problem
    ("I'm trying to install Ubuntu off a USB disk ... it's going really slow"): a reader cannot
    place a follow-up without what it follows."""
    topic = conversation.topic
    title = reading.by_id.get(topic.message_ids[0]) if topic.message_ids else None
    if title is None:
        return None
    if title.conversation is None or reading.participants.addressee(title.normalized_text) is None:
        return title
    # A threaded window holds each conversation's messages together, in time order.
    at = reading.order[title.message_id]
    first = title
    while at > 0 and reading.messages[at - 1].conversation == title.conversation:
        at -= 1
        first = reading.messages[at]
    if (
        first is not title
        and first.author == title.author
        and informative_opening(first.normalized_text)
    ):
        return first
    return title


def exchange(
    reading: WindowReading, conversation: RankedConversation
) -> tuple[WindowMessage, WindowMessage | None] | None:
    """A conversation's opening (`opening_of`) and first answer."""
    opening = opening_of(reading, conversation)
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
        or echo_question(strip_address(answer.message.normalized_text, reading.participants))
    ):
        # "thanks!", a bot's factoid or "slow wifi? works fine for me" is no answer to quote
        answer = None
    return opening, answer.message if answer else None
