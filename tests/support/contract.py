"""Readers of validated extraction output: a stored pointer always repeats its quote and a
synthesized knowledge item always has its content, so a test reads them as plain strings and
fails at once if one is missing."""

from __future__ import annotations

from runner.core.contract import ContentPointer, KnowledgeItem


def quote_of(pointer: ContentPointer | None) -> str:
    """The quote of a validated pointer."""
    assert pointer is not None and pointer.quote is not None, pointer
    return pointer.quote


def pointer_of(item: KnowledgeItem) -> ContentPointer:
    """The pointer of a verbatim knowledge item."""
    assert item.content_pointer is not None, item
    return item.content_pointer


def content_of(item: KnowledgeItem) -> str:
    """The text of a synthesized knowledge item."""
    assert item.content is not None, item
    return item.content
