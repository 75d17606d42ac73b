"""The input of disentanglement: one channel message as plain data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One message of an ordered channel.

    `ts` is seconds since any fixed origin (e.g. `datetime.timestamp()`); only differences are
    used. `reply_to` is the index, in the same list, of the earlier message this one explicitly
    answers (a Slack thread, a Discord reply, a JSONL `reply_to`; see `explicit_parents`).
    `system` marks notices (joins, quits, nick changes): they answer nothing and nothing
    answers them.
    """

    author: str
    ts: float
    text: str
    reply_to: int | None = None
    system: bool = False
