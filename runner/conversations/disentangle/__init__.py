"""Disentanglement: which earlier message each message of a channel answers, and the
conversations that makes (see `runner.conversations.disentangle.api`)."""

from runner.conversations.disentangle.api import (
    ChannelRecord,
    Disentanglement,
    disentangle,
    explicit_parents,
    link,
    link_records,
)
from runner.conversations.disentangle.message import Message

__all__ = [
    "ChannelRecord",
    "Disentanglement",
    "Message",
    "disentangle",
    "explicit_parents",
    "link",
    "link_records",
]
