"""Typed rows: one SQLModel class per table of db/migrations (`table=True`, the columns as the
migrations create them; tests/integration/db/test_models.py compares the two), and small non-table models
for the queries that return a projection or a join. db/ functions return these instead of
asyncpg records; `db.models.as_rows` and its siblings build them.

The migrations stay the schema's source (the models never create tables): the hot paths,
claim, keyset pages and COPY ingest, are hand-written SQL in db/queries.sql, and the models
are the typed view of their results.
"""

from sqlalchemy.orm import configure_mappers

from db.models.activity import ActivityDay
from db.models.channel_items import (
    ChannelItem,
    ChannelItemEvent,
    ChannelItemEventWithMessage,
    ChannelItemMention,
    ChannelOpenItemCounts,
    CountedItemMention,
    DigestItemRow,
)
from db.models.channels import (
    Channel,
    ChannelColumns,
    ChannelMessageCount,
    ChannelOverview,
    ChannelUncoveredCount,
    ChannelWithServer,
    Message,
    MessageFields,
    MessageId,
    MessageRange,
    MessageRevision,
    MessageText,
    RevisionText,
    Server,
    SliceBound,
    WindowMessageRow,
)
from db.models.conversations import (
    Conversation,
    ConversationWithState,
    MessageConversation,
    ThreadContextRow,
)
from db.models.deliveries import (
    Delivery,
    DeliveryListing,
    DeliveryStateCount,
    DeliveryTarget,
    Destination,
    DestinationSecrets,
    ScheduleDestination,
    ScheduleDestinationRow,
)
from db.models.digests import (
    ActionItem,
    Artifact,
    ArtifactWithMessage,
    ChunkResult,
    CitedAuthor,
    Decision,
    Digest,
    DigestItemCounts,
    DigestMessage,
    EditedMessage,
    KnowledgeItem,
    KnowledgeItemWithMessage,
    Link,
    OpenQuestion,
    Topic,
)
from db.models.documents import (
    Document,
    DocumentColumns,
    DocumentDigest,
    DocumentFields,
    DocumentListing,
    StoredDocument,
)
from db.models.entities import (
    Entity,
    EntityItemRef,
    EntityMention,
    OwnedDigestMention,
    OwnedItemRef,
    StoredEntityKey,
    StoredProfileKey,
    TopicProfile,
    TopicProfileDigest,
    TopicProfileItem,
    TrendPoint,
)
from db.models.jobs import DigestJob
from db.models.people import CatchUpItem, CatchUpMessage, Person, PersonHandle, ReadMarker
from db.models.reports import Report, ReportDigestItem
from db.models.rows import as_row, as_row_or_none, as_rows
from db.models.schedules import DueSchedule, Schedule, ScheduleRun

# SQLAlchemy sets up a table model's attributes on first ORM use (a session, an `__init__`);
# rows built by `model_construct` are neither, so the setup runs here, once, at import.
configure_mappers()

__all__ = [
    "CatchUpItem",
    "CatchUpMessage",
    "Person",
    "PersonHandle",
    "ReadMarker",
    "ActionItem",
    "ActivityDay",
    "Artifact",
    "ArtifactWithMessage",
    "Channel",
    "ChannelColumns",
    "ChannelItem",
    "ChannelItemEvent",
    "ChannelItemEventWithMessage",
    "ChannelItemMention",
    "DigestItemRow",
    "ChannelMessageCount",
    "ChannelOpenItemCounts",
    "ChannelOverview",
    "CountedItemMention",
    "ChannelUncoveredCount",
    "ChannelWithServer",
    "ChunkResult",
    "CitedAuthor",
    "Conversation",
    "ConversationWithState",
    "Decision",
    "Digest",
    "DigestItemCounts",
    "DigestJob",
    "DigestMessage",
    "Document",
    "DocumentColumns",
    "DocumentDigest",
    "DocumentFields",
    "DocumentListing",
    "Delivery",
    "DeliveryListing",
    "DeliveryStateCount",
    "DeliveryTarget",
    "Destination",
    "DestinationSecrets",
    "DueSchedule",
    "EditedMessage",
    "Entity",
    "EntityItemRef",
    "EntityMention",
    "OwnedDigestMention",
    "OwnedItemRef",
    "StoredEntityKey",
    "StoredProfileKey",
    "TopicProfile",
    "TopicProfileDigest",
    "TopicProfileItem",
    "TrendPoint",
    "KnowledgeItem",
    "KnowledgeItemWithMessage",
    "Link",
    "Message",
    "MessageConversation",
    "MessageFields",
    "MessageText",
    "MessageId",
    "MessageRange",
    "SliceBound",
    "MessageRevision",
    "OpenQuestion",
    "Report",
    "ReportDigestItem",
    "RevisionText",
    "Schedule",
    "ScheduleDestination",
    "ScheduleDestinationRow",
    "ScheduleRun",
    "Server",
    "StoredDocument",
    "ThreadContextRow",
    "Topic",
    "WindowMessageRow",
    "as_row",
    "as_row_or_none",
    "as_rows",
]
