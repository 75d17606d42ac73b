"""The Relay root fields `node(id:)` and `nodes(ids:)`: any node by its global id, through the
request's DataLoaders (so `nodes` of 100 ids costs one query per type, not 100).

Readers may read every node type, as they may read every list. Only global ids are accepted
here: a legacy numeric id names no type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated

import strawberry
from strawberry import relay
from strawberry.types import Info

from schema.context import Context
from schema.errors import PAGE_SIZE, client_error
from schema.types.catchup import Person
from schema.types.channel import Channel, Message
from schema.types.conversation import Conversation
from schema.types.delivery import Delivery, Destination
from schema.types.digest import Digest, KnowledgeItem
from schema.types.document import Document, DocumentDigest
from schema.types.entity import Entity, TopicProfile
from schema.types.ids import (
    CHANNEL,
    CONVERSATION,
    DELIVERY,
    DESTINATION,
    DIGEST,
    DIGEST_JOB,
    DOCUMENT,
    DOCUMENT_DIGEST,
    ENTITY,
    KNOWLEDGE_ITEM,
    MESSAGE,
    PERSON,
    REPORT,
    SCHEDULE,
    TOPIC_PROFILE,
    TRACKED_ITEM,
    decode_global_id,
)
from schema.types.item import TrackedItem
from schema.types.job import DigestJob
from schema.types.report import Report
from schema.types.schedule import Schedule

MAX_NODES = 100

NodeLoad = Callable[[Context, int], Awaitable[relay.Node | None]]


async def _channel(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.channel.load(row_id)
    return Channel.from_row(row) if row else None


async def _message(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.message.load(row_id)
    return Message.from_row(row) if row else None


async def _digest(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.digest.load(row_id)
    return Digest.from_row(row) if row else None


async def _knowledge_item(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.knowledge_item.load(row_id)
    return KnowledgeItem.from_row(row) if row else None


async def _job(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.job.load(row_id)
    return DigestJob.from_row(row) if row else None


async def _document(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.document.load(row_id)
    return Document.from_row(row) if row else None


async def _document_digest(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.document_digest.load(row_id)
    return DocumentDigest.from_row(row) if row else None


async def _report(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.report.load(row_id)
    return Report.from_row(row) if row else None


async def _conversation(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.conversation.load(row_id)
    return Conversation.from_row(row) if row else None


async def _tracked_item(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.channel_item.load(row_id)
    return TrackedItem.from_row(row) if row else None


async def _schedule(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.schedule.load(row_id)
    return Schedule.from_row(row) if row else None


async def _destination(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.destination.load(row_id)
    return Destination.from_row(row) if row else None


async def _delivery(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.delivery.load(row_id)
    return Delivery.from_row(row) if row else None


async def _entity(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.entity.load(row_id)
    return Entity.from_row(row) if row else None


async def _topic_profile(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.topic_profile.load(row_id)
    return TopicProfile.from_row(row) if row else None


async def _person(context: Context, row_id: int) -> relay.Node | None:
    row = await context.loaders.person.load(row_id)
    return Person.of(row) if row else None


NODE_LOADS: dict[str, NodeLoad] = {
    CHANNEL: _channel,
    MESSAGE: _message,
    DIGEST: _digest,
    KNOWLEDGE_ITEM: _knowledge_item,
    DIGEST_JOB: _job,
    DOCUMENT: _document,
    DOCUMENT_DIGEST: _document_digest,
    REPORT: _report,
    CONVERSATION: _conversation,
    TRACKED_ITEM: _tracked_item,
    ENTITY: _entity,
    TOPIC_PROFILE: _topic_profile,
    SCHEDULE: _schedule,
    PERSON: _person,
    DESTINATION: _destination,
    DELIVERY: _delivery,
}


@strawberry.type
class NodeQueries:
    @strawberry.field(description="Any node by its global id; null if it no longer exists.")
    async def node(self, info: Info[Context, None], id: strawberry.ID) -> relay.Node | None:
        type_name, row_id = decode_global_id(id)
        return await NODE_LOADS[type_name](info.context, row_id)

    @strawberry.field(
        description=f"Nodes by global id (at most {MAX_NODES}), in the order asked, null for "
        "those that no longer exist."
    )
    async def nodes(
        self,
        info: Info[Context, None],
        ids: Annotated[list[strawberry.ID], strawberry.argument(description=f"1 to {MAX_NODES}.")],
    ) -> list[relay.Node | None]:
        if len(ids) > MAX_NODES:
            raise client_error(f"ids: at most {MAX_NODES}, got {len(ids)}", PAGE_SIZE)
        keys = [decode_global_id(value) for value in ids]
        # Run together, so each type's loader gets all its keys in one batch.
        loads = [NODE_LOADS[type_name](info.context, row_id) for type_name, row_id in keys]
        return list(await asyncio.gather(*loads))
