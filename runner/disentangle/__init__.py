"""Disentanglement: which earlier message each message of a channel answers, and the
conversations that makes (see `runner.disentangle.api`)."""

from runner.disentangle.api import Disentanglement, disentangle, explicit_parents, link
from runner.disentangle.message import Message

__all__ = ["Disentanglement", "Message", "disentangle", "explicit_parents", "link"]
