"""Disentanglement: which earlier message each message of a channel answers, and the
conversations that makes (see `runner.disentangle.api`)."""

from runner.disentangle.api import (
    ChannelRecord,
    Disentanglement,
    disentangle,
    explicit_parents,
    link,
    link_records,
)
from runner.disentangle.message import Message

__all__ = ["ChannelRecord", "Disentanglement", "Message", "disentangle", "explicit_parents",
           "link", "link_records"]  # fmt: skip
