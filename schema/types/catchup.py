"""A person's catch-up as the API shows it: per channel, the most needing first, what waits on
the person (questions put to them, action items they own, mentions, decisions since), each
entry cited by the messages it rests on with the exact words quoted; and people with their
handles and read markers."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry
from strawberry import relay
from strawberry.types import Info

from db import models
from runner.catchup.ranking import EntryKind
from runner.catchup.sections import CatchUp as CatchUpData
from runner.catchup.sections import ChannelSection, Citation, Entry
from schema.context import Context
from schema.gate.bounded_lists import capped, first_argument
from schema.types.ids import CHANNEL, MESSAGE, TRACKED_ITEM, global_id, optional_global_id
from schema.types.item import TrackedItemStatus

# Bounded lists (schema/gate/bounded_lists.py): the most a client gets of each, and its default;
# the count beside each counts them all.
MAX_SECTION_ENTRIES = 100
SECTION_ENTRIES = 20
MAX_CATCH_UP_CHANNELS = 100
CATCH_UP_CHANNELS = 20
MAX_ENTRY_CITATIONS = 10
ENTRY_CITATIONS = 3


@strawberry.enum(description="What a catch-up entry is, in the order a section lists them.")
class CatchUpEntryKind(Enum):
    QUESTION = "question"
    ACTION_ITEM = "action_item"
    MENTION = "mention"
    DECISION = "decision"


@strawberry.type(description="A cited message and the exact characters quoted from it.")
class CatchUpCitation:
    message_id: strawberry.ID = strawberry.field(description="The message's global id.")
    external_id: str = strawberry.field(description="The message's id in its source.")
    author: str
    at: datetime
    revision: int = strawberry.field(description="The revision of the message quoted.")
    char_start: int = strawberry.field(description="Start of the quote in the normalized text.")
    char_end: int
    quote: str = strawberry.field(description="normalizedText[charStart:charEnd], verbatim.")

    @classmethod
    def of(cls, cited: Citation) -> CatchUpCitation:
        return cls(
            message_id=global_id(MESSAGE, cited.row_id),
            external_id=cited.message_id,
            author=cited.author,
            at=cited.at,
            revision=cited.revision,
            char_start=cited.char_start,
            char_end=cited.char_end,
            quote=cited.quote,
        )


@strawberry.type(description="One thing in a channel that waits on the person or is news to them.")
class CatchUpEntry:
    kind: CatchUpEntryKind
    text: str = strawberry.field(
        description="The tracked item's text; for a mention, the words quoted."
    )
    at: datetime = strawberry.field(description="When it was said.")
    item_id: strawberry.ID | None = strawberry.field(
        description="The tracked item (questions, action items, decisions); null for a mention."
    )
    status: TrackedItemStatus | None = strawberry.field(description="The tracked item's status.")
    owner: str | None = strawberry.field(
        description="Who asked a question or owes an action item, when known."
    )
    citation_count: int = strawberry.field(description="How many messages it rests on.")
    cited: strawberry.Private[list[CatchUpCitation]]

    @strawberry.field(description="The messages it rests on, each with the words quoted.")
    def citations(
        self,
        first: Annotated[
            int, first_argument(MAX_ENTRY_CITATIONS, "citationCount")
        ] = ENTRY_CITATIONS,
    ) -> list[CatchUpCitation]:
        return capped(self.cited, first, MAX_ENTRY_CITATIONS)

    @classmethod
    def of(cls, entry: Entry) -> CatchUpEntry:
        return cls(
            kind=CatchUpEntryKind(entry.kind.value),
            text=entry.text,
            at=entry.at,
            item_id=optional_global_id(TRACKED_ITEM, entry.item_id),
            status=TrackedItemStatus(entry.status) if entry.status else None,
            owner=entry.owner,
            citation_count=len(entry.citations),
            cited=[CatchUpCitation.of(c) for c in entry.citations],
        )


@strawberry.type(description="How many entries of each kind a channel's section holds.")
class CatchUpCounts:
    questions: int = strawberry.field(description="Open questions put to the person.")
    action_items: int = strawberry.field(description="Open action items the person owns.")
    mentions: int
    decisions: int
    total: int


@strawberry.type(description="One channel's part of a catch-up.")
class CatchUpChannel:
    channel_id: strawberry.ID
    channel_name: str
    server_name: str | None
    since: datetime = strawberry.field(
        description="Where this channel's catch-up starts (mentions and decisions after it; "
        "open questions and action items however old)."
    )
    rank: int = strawberry.field(description="1 for the channel that needs the person most.")
    score: int = strawberry.field(
        description="What ranks it: 30 per open question put to the person, 20 per action item "
        "they own, 2 per mention and 1 per decision (at most 5 of each of the last two counted)."
    )
    counts: CatchUpCounts
    section: strawberry.Private[ChannelSection]

    @strawberry.field(
        description="Questions, action items, mentions, decisions; newest first in each."
    )
    def entries(
        self,
        first: Annotated[
            int, first_argument(MAX_SECTION_ENTRIES, "counts.total")
        ] = SECTION_ENTRIES,
    ) -> list[CatchUpEntry]:
        rows = capped(list(self.section.entries), first, MAX_SECTION_ENTRIES)
        return [CatchUpEntry.of(entry) for entry in rows]

    @classmethod
    def of(cls, section: ChannelSection, rank: int) -> CatchUpChannel:
        counts = section.counts
        return cls(
            channel_id=global_id(CHANNEL, section.channel.channel_id),
            channel_name=section.channel.name,
            server_name=section.channel.server_name,
            since=section.channel.since,
            rank=rank,
            score=section.score,
            counts=CatchUpCounts(
                questions=counts.get(EntryKind.QUESTION, 0),
                action_items=counts.get(EntryKind.ACTION_ITEM, 0),
                mentions=counts.get(EntryKind.MENTION, 0),
                decisions=counts.get(EntryKind.DECISION, 0),
                total=len(section.entries),
            ),
            section=section,
        )


@strawberry.type(description="What waits on a person across channels, cited.")
class CatchUp:
    person: str
    known: bool = strawberry.field(
        description="false: nobody of that name is stored; their name is their one handle."
    )
    handles: list[str] = strawberry.field(description="The folded handles matched.")
    since: datetime | None = strawberry.field(
        description="As asked; null: each channel's read marker, else defaultSince."
    )
    default_since: datetime
    generated_at: datetime
    truncated: bool = strawberry.field(
        description="More messages or items were candidates than one catch-up reads; the "
        "oldest are left out."
    )
    channel_count: int = strawberry.field(
        description="How many channels have anything for the person."
    )
    ranked: strawberry.Private[list[CatchUpChannel]]

    @strawberry.field(
        description="The channels with anything for the person, the most needing first."
    )
    def channels(
        self,
        first: Annotated[
            int, first_argument(MAX_CATCH_UP_CHANNELS, "channelCount")
        ] = CATCH_UP_CHANNELS,
    ) -> list[CatchUpChannel]:
        return capped(self.ranked, first, MAX_CATCH_UP_CHANNELS)

    @classmethod
    def of(cls, data: CatchUpData) -> CatchUp:
        return cls(
            person=data.person,
            known=data.person_id is not None,
            handles=list(data.handles),
            since=data.since,
            default_since=data.default_since,
            generated_at=data.generated_at,
            truncated=data.truncated,
            channel_count=len(data.channels),
            ranked=[CatchUpChannel.of(s, rank) for rank, s in enumerate(data.channels, 1)],
        )


@strawberry.type(description="A name a person writes or is addressed by.")
class PersonHandle:
    handle: str = strawberry.field(description="As it was linked.")
    key: str = strawberry.field(
        description="Folded: lower case, no leading @, IRC suffixes (_ ^ |away) and Discord "
        "discriminators dropped; what messages are matched against."
    )
    channel_id: strawberry.ID | None = strawberry.field(
        description="Only in this channel; null: in every channel."
    )

    @classmethod
    def of(cls, row: models.PersonHandle) -> PersonHandle:
        return cls(
            handle=row.handle,
            key=row.handle_key,
            channel_id=optional_global_id(CHANNEL, row.channel_id),
        )


@strawberry.type(description="A person the catch-up knows, with their handles.")
class Person(relay.Node):
    id: relay.NodeID[int]
    name: str
    created_at: datetime

    @classmethod
    def of(cls, row: models.Person) -> Person:
        return cls(id=row.id, name=row.name, created_at=row.created_at)

    @strawberry.field(description="Oldest first.")
    async def handles(self, info: Info[Context, None]) -> list[PersonHandle]:
        rows = await info.context.loaders.person_handles.load(self.id)
        return [PersonHandle.of(row) for row in rows]


@strawberry.type(description="How far a person has read a channel.")
class ReadMarker:
    person: Person
    channel_id: strawberry.ID
    read_until: datetime
