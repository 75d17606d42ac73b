"""A stored digest's items read once for every file made of it (the terminal's Markdown and the
exports): each kind's rows, and the exact text each verbatim pointer slices from the message
revision it was made from, whatever the message's text is now."""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg

from db import channels as channel_queries
from db import digests as digest_queries
from db.models import (
    ActionItem,
    ArtifactWithMessage,
    Decision,
    KnowledgeItemWithMessage,
    Link,
    OpenQuestion,
    Topic,
)

PointedRow = ArtifactWithMessage | KnowledgeItemWithMessage


@dataclass(frozen=True)
class DigestItems:
    topics: list[Topic]
    decisions: list[Decision]
    action_items: list[ActionItem]
    open_questions: list[OpenQuestion]
    links: list[Link]
    artifacts: list[ArtifactWithMessage]
    knowledge_items: list[KnowledgeItemWithMessage]
    # (message id, revision) → that revision's normalized text, for the rows with a pointer.
    texts: dict[tuple[int, int], str | None] = field(default_factory=dict)

    def pointer_text(self, row: PointedRow) -> str:
        """The characters `row`'s pointer slices ("" when its message is gone)."""
        text = self.texts.get((row.message_id or 0, row.message_revision)) or ""
        return text[row.char_start : row.char_end]


async def read_digest_items(connection: asyncpg.Connection, digest_id: int) -> DigestItems:
    ids = [digest_id]
    artifacts = await digest_queries.items_of_digests(connection, ArtifactWithMessage, ids)
    knowledge_items = await digest_queries.items_of_digests(
        connection, KnowledgeItemWithMessage, ids
    )
    pointed: list[PointedRow] = [*artifacts]
    pointed += [row for row in knowledge_items if row.message_id]
    revisions = await channel_queries.revision_texts(
        connection,
        [row.message_id for row in pointed if row.message_id is not None],
        [row.message_revision for row in pointed],
    )
    return DigestItems(
        topics=await digest_queries.items_of_digests(connection, Topic, ids),
        decisions=await digest_queries.items_of_digests(connection, Decision, ids),
        action_items=await digest_queries.items_of_digests(connection, ActionItem, ids),
        open_questions=await digest_queries.items_of_digests(connection, OpenQuestion, ids),
        links=await digest_queries.items_of_digests(connection, Link, ids),
        artifacts=artifacts,
        knowledge_items=knowledge_items,
        texts={(row.message_id, row.revision): row.normalized_text for row in revisions},
    )
