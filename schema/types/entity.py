"""The Entity and TopicProfile nodes: what a channel talks about across its digests, each with the
digests and items where it appears. Everything a page of them asks for goes through the request's
DataLoaders (schema/resolvers/loaders.py): one query per field, not per row."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry
from strawberry import relay
from strawberry.types import Info

from db import models
from runner.entities.mentions import EntityKind
from schema.context import Context
from schema.gate.bounded_lists import (
    APPEARANCE_MESSAGE_IDS,
    MAX_APPEARANCE_MESSAGE_IDS,
    MAX_OWNER_DIGESTS,
    MAX_OWNER_ITEMS,
    MAX_PROFILE_CONVERSATIONS,
    OWNER_DIGESTS,
    OWNER_ITEMS,
    PROFILE_CONVERSATIONS,
    capped,
    first_argument,
)
from schema.types.conversation import Conversation
from schema.types.digest import DigestSummary
from schema.types.ids import CHANNEL, DIGEST, global_id

strawberry.enum(
    EntityKind,
    name="EntityKind",
    description="What kind of thing an entity is, as far as the rules can tell.",
)


@strawberry.enum(description="The section of a digest an item belongs to.")
class DigestItemKind(Enum):
    TOPIC = "topic"
    DECISION = "decision"
    ACTION_ITEM = "action_item"
    OPEN_QUESTION = "open_question"
    KNOWLEDGE_ITEM = "knowledge_item"


@strawberry.type(description="One item of a digest, by its section and position there.")
class ItemReference:
    kind: DigestItemKind
    position: int = strawberry.field(description="0-based, in its digest's section.")
    digest_id: strawberry.ID
    digest_row: strawberry.Private[int]

    @strawberry.field(
        description="The item's text: a topic's or knowledge item's title, else its text."
    )
    async def text(self, info: Info[Context, None]) -> str | None:
        loaders = info.context.loaders
        position = self.position
        if self.kind is DigestItemKind.TOPIC:
            topics = await loaders.topics.load(self.digest_row)
            return topics[position].title if position < len(topics) else None
        if self.kind is DigestItemKind.KNOWLEDGE_ITEM:
            items = await loaders.knowledge_items.load(self.digest_row)
            return items[position].title if position < len(items) else None
        if self.kind is DigestItemKind.DECISION:
            decisions = await loaders.decisions.load(self.digest_row)
            return decisions[position].text if position < len(decisions) else None
        if self.kind is DigestItemKind.ACTION_ITEM:
            actions = await loaders.action_items.load(self.digest_row)
            return actions[position].text if position < len(actions) else None
        questions = await loaders.open_questions.load(self.digest_row)
        return questions[position].text if position < len(questions) else None

    @strawberry.field
    async def digest(self, info: Info[Context, None]) -> DigestSummary | None:
        row = await info.context.loaders.digest.load(self.digest_row)
        return DigestSummary.from_row(row) if row else None

    @classmethod
    def from_row(cls, row: models.OwnedItemRef) -> ItemReference:
        return cls(
            kind=DigestItemKind(row.item_kind),
            position=row.position,
            digest_id=global_id(DIGEST, row.digest_id),
            digest_row=row.digest_id,
        )


@strawberry.type(
    description="A digest where an entity or a topic appears, and with which messages."
)
class Appearance:
    digest_id: strawberry.ID
    message_count: int = strawberry.field(
        description=f"How many of its messages there are (messageIds lists the first "
        f"{MAX_APPEARANCE_MESSAGE_IDS:,} at most)."
    )
    digest_row: strawberry.Private[int]
    conversation_rows: strawberry.Private[list[int]]
    listed_message_ids: strawberry.Private[list[str]]

    @strawberry.field(description="External ids, in time order.")
    def message_ids(
        self,
        first: Annotated[
            int, first_argument(MAX_APPEARANCE_MESSAGE_IDS, "messageCount")
        ] = APPEARANCE_MESSAGE_IDS,
    ) -> list[str]:
        return capped(self.listed_message_ids, first, MAX_APPEARANCE_MESSAGE_IDS)

    @strawberry.field
    async def digest(self, info: Info[Context, None]) -> DigestSummary | None:
        row = await info.context.loaders.digest.load(self.digest_row)
        return DigestSummary.from_row(row) if row else None

    @classmethod
    def from_row(cls, row: models.OwnedDigestMention) -> Appearance:
        return cls(
            digest_id=global_id(DIGEST, row.digest_id),
            message_count=row.message_count,
            listed_message_ids=list(row.message_ids),
            digest_row=row.digest_id,
            conversation_rows=list(row.conversation_ids),
        )


@strawberry.type(description="Mentions in one ISO week.")
class TrendPoint:
    week: str = strawberry.field(description='ISO week, e.g. "2024-W18".')
    mentions: int = strawberry.field(description="Distinct messages in that week.")


@strawberry.type(
    description="Something a channel talks about: a tool, library, model, service, file, person "
    "or name, under one canonical key whatever the spelling (case, separators, version suffix)."
)
class Entity(relay.Node):
    id: relay.NodeID[int]
    channel_id: strawberry.ID
    key: str = strawberry.field(description="The canonical key every spelling folds to.")
    name: str = strawberry.field(description="The spelling first stored (the most used one).")
    kind: EntityKind
    aliases: list[str] = strawberry.field(description="Spellings seen, at most 10.")
    versions: list[str] = strawberry.field(description="Versions mentioned with it, at most 10.")
    mention_count: int = strawberry.field(
        description="Messages mentioning it, counted by coverage digests (each message once)."
    )
    first_seen: datetime | None
    last_seen: datetime | None

    @classmethod
    def from_row(cls, row: models.Entity) -> Entity:
        return cls(
            id=row.id,
            channel_id=global_id(CHANNEL, row.channel_id),
            key=row.key,
            name=row.name,
            kind=EntityKind(row.kind),
            aliases=list(row.aliases),
            versions=list(row.versions),
            mention_count=row.mention_count,
            first_seen=row.first_seen,
            last_seen=row.last_seen,
        )

    @strawberry.field(
        description=f"Digest items naming it, newest digest first (the newest {MAX_OWNER_ITEMS})."
    )
    async def items(
        self,
        info: Info[Context, None],
        first: Annotated[int, first_argument(MAX_OWNER_ITEMS, "itemCount")] = OWNER_ITEMS,
    ) -> list[ItemReference]:
        rows = await info.context.loaders.entity_items.load(self.id)
        return [ItemReference.from_row(row) for row in capped(rows, first, MAX_OWNER_ITEMS)]

    @strawberry.field(description="How many digest items name it (items lists the newest).")
    async def item_count(self, info: Info[Context, None]) -> int:
        rows = await info.context.loaders.entity_items.load(self.id)
        return rows[0].owner_total if rows else 0

    @strawberry.field(
        description=f"The latest digests mentioning it, newest first (the latest {MAX_OWNER_DIGESTS})."
    )
    async def digests(
        self,
        info: Info[Context, None],
        first: Annotated[int, first_argument(MAX_OWNER_DIGESTS, "digestCount")] = OWNER_DIGESTS,
    ) -> list[Appearance]:
        rows = await info.context.loaders.entity_digests.load(self.id)
        return [Appearance.from_row(row) for row in capped(rows, first, MAX_OWNER_DIGESTS)]

    @strawberry.field(description="How many digests mention it (digests lists the latest).")
    async def digest_count(self, info: Info[Context, None]) -> int:
        rows = await info.context.loaders.entity_digests.load(self.id)
        return rows[0].owner_total if rows else 0

    @strawberry.field(description="Messages mentioning it per ISO week, oldest week first.")
    async def trend(self, info: Info[Context, None]) -> list[TrendPoint]:
        rows = await info.context.loaders.entity_trend.load(self.id)
        return [TrendPoint(week=row.week, mentions=row.mentions) for row in rows]


@strawberry.type(
    description="A recurring topic of a channel: digest topics sharing one key (the entities "
    "their titles name, else their titles' content words), across digests over time."
)
class TopicProfile(relay.Node):
    id: relay.NodeID[int]
    channel_id: strawberry.ID
    key: str
    title: str = strawberry.field(description="The title of the first topic of the profile.")
    mention_count: int = strawberry.field(
        description="Messages its topics cite, counted by coverage digests."
    )
    first_seen: datetime
    last_seen: datetime

    @classmethod
    def from_row(cls, row: models.TopicProfile) -> TopicProfile:
        return cls(
            id=row.id,
            channel_id=global_id(CHANNEL, row.channel_id),
            key=row.key,
            title=row.title,
            mention_count=row.mention_count,
            first_seen=row.first_seen,
            last_seen=row.last_seen,
        )

    @strawberry.field(
        description=f"The latest digests where it appears, newest first (the latest {MAX_OWNER_DIGESTS})."
    )
    async def digests(
        self,
        info: Info[Context, None],
        first: Annotated[int, first_argument(MAX_OWNER_DIGESTS, "digestCount")] = OWNER_DIGESTS,
    ) -> list[Appearance]:
        rows = await info.context.loaders.topic_profile_digests.load(self.id)
        return [Appearance.from_row(row) for row in capped(rows, first, MAX_OWNER_DIGESTS)]

    @strawberry.field(description="How many digests it appears in (digests lists the latest).")
    async def digest_count(self, info: Info[Context, None]) -> int:
        rows = await info.context.loaders.topic_profile_digests.load(self.id)
        return rows[0].owner_total if rows else 0

    async def _conversation_rows(self, info: Info[Context, None]) -> list[int]:
        rows = await info.context.loaders.topic_profile_digests.load(self.id)
        return list(dict.fromkeys(i for row in rows for i in row.conversation_ids))

    @strawberry.field(
        description=f"The conversations of its messages in its latest {MAX_OWNER_DIGESTS} "
        "digests, newest digest first."
    )
    async def conversations(
        self,
        info: Info[Context, None],
        first: Annotated[
            int, first_argument(MAX_PROFILE_CONVERSATIONS, "conversationCount")
        ] = PROFILE_CONVERSATIONS,
    ) -> list[Conversation]:
        ids = capped(await self._conversation_rows(info), first, MAX_PROFILE_CONVERSATIONS)
        found = await info.context.loaders.conversation.load_many(ids)
        return [Conversation.from_row(row) for row in found if row is not None]

    @strawberry.field(description="How many conversations `conversations` can list.")
    async def conversation_count(self, info: Info[Context, None]) -> int:
        return len(await self._conversation_rows(info))

    @strawberry.field(
        description="Items (decisions, action items, open questions, knowledge items) citing "
        f"its messages, newest digest first (the newest {MAX_OWNER_ITEMS})."
    )
    async def items(
        self,
        info: Info[Context, None],
        first: Annotated[int, first_argument(MAX_OWNER_ITEMS, "itemCount")] = OWNER_ITEMS,
    ) -> list[ItemReference]:
        rows = await info.context.loaders.topic_profile_items.load(self.id)
        return [ItemReference.from_row(row) for row in capped(rows, first, MAX_OWNER_ITEMS)]

    @strawberry.field(description="How many items cite its messages (items lists the newest).")
    async def item_count(self, info: Info[Context, None]) -> int:
        rows = await info.context.loaders.topic_profile_items.load(self.id)
        return rows[0].owner_total if rows else 0

    @strawberry.field(description="Mentions per ISO week, oldest week first.")
    async def trend(self, info: Info[Context, None]) -> list[TrendPoint]:
        rows = await info.context.loaders.topic_profile_trend.load(self.id)
        return [TrendPoint(week=row.week, mentions=row.mentions) for row in rows]
