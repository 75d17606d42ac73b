"""Ids as clients see them: the one place they are formatted and parsed.

A node's id is a Relay global id, base64("Type:pk") (standard alphabet, padded), e.g. channel 1
is "Q2hhbm5lbDox". It has one spelling: the pk is canonical decimal, and the base64 must be
exactly what `global_id` makes (a decoder that skips stray characters or ignores padding bits
would let several strings name one node, and a cache or a log keyed on the string disagree
with the database). Reference fields (`channelId`, `digestId`, ...) carry the same global ids,
so any id the API returns can be passed back to `node(id:)`.

For one release, single-object fields and id arguments also accept a legacy numeric id (the
row's canonical decimal digits) of their type. A global id of another type is an error there.
Keyset cursors are db/pages.py's (KeysetCursor).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Final, TypeAlias

import strawberry
from graphql import GraphQLError

from schema.errors import BAD_ID, client_error

# The GraphQL types that implement Node, by name (the type part of a global id).
CHANNEL: Final = "Channel"
MESSAGE: Final = "Message"
DIGEST: Final = "Digest"
KNOWLEDGE_ITEM: Final = "KnowledgeItem"
DIGEST_JOB: Final = "DigestJob"
DOCUMENT: Final = "Document"
DOCUMENT_DIGEST: Final = "DocumentDigest"
REPORT: Final = "Report"
CONVERSATION: Final = "Conversation"
TRACKED_ITEM: Final = "TrackedItem"
ENTITY: Final = "Entity"
TOPIC_PROFILE: Final = "TopicProfile"
SCHEDULE: Final = "Schedule"
PERSON: Final = "Person"
DESTINATION: Final = "Destination"
DELIVERY: Final = "Delivery"
NODE_TYPES: Final = frozenset(
    {
        CHANNEL,
        MESSAGE,
        DIGEST,
        KNOWLEDGE_ITEM,
        DIGEST_JOB,
        DOCUMENT,
        DOCUMENT_DIGEST,
        REPORT,
        CONVERSATION,
        TRACKED_ITEM,
        ENTITY,
        TOPIC_PROFILE,
        SCHEDULE,
        PERSON,
        DESTINATION,
        DELIVERY,
    }
)

# A legacy id's only spelling: ASCII digits, no sign, spaces, leading zeros or separators.
# Python's int() also reads "١" (an Arabic-Indic one), "1_0" and " 7 ".
CANONICAL_ID = re.compile(r"(0|[1-9][0-9]{0,18})\Z")
MAX_ID = 2**63 - 1  # bigint
MAX_GLOBAL_ID_CHARS = 64


def canonical_id(text: str) -> int | None:
    """The row id `text` spells canonically in decimal, or None if it is no such id."""
    if CANONICAL_ID.match(text) and int(text) <= MAX_ID:
        return int(text)
    return None


def global_id(type_name: str, row_id: int) -> strawberry.ID:
    """The global id of one node, as every field that names it returns it."""
    return strawberry.ID(base64.b64encode(f"{type_name}:{row_id}".encode()).decode("ascii"))


def optional_global_id(type_name: str, row_id: int | None) -> strawberry.ID | None:
    return global_id(type_name, row_id) if row_id is not None else None


LEGACY_ID_HELP = (
    "A global id; a numeric id of this type (its row id in decimal) is still accepted for one "
    "release (deprecated)."
)
# An id argument of a single-object field or a mutation.
IdArgument: TypeAlias = Annotated[strawberry.ID, strawberry.argument(description=LEGACY_ID_HELP)]

# How an error message names each type.
_LABELS: Final = {
    CHANNEL: "channel",
    MESSAGE: "message",
    DIGEST: "digest",
    KNOWLEDGE_ITEM: "knowledge item",
    DIGEST_JOB: "job",
    DOCUMENT: "document",
    DOCUMENT_DIGEST: "document digest",
    REPORT: "report",
    CONVERSATION: "conversation",
    TRACKED_ITEM: "tracked item",
    ENTITY: "entity",
    TOPIC_PROFILE: "topic profile",
    SCHEDULE: "schedule",
    PERSON: "person",
    DESTINATION: "destination",
    DELIVERY: "delivery",
}


def _bad_id(text: str, why: str, type_name: str | None = None) -> GraphQLError:
    label = f"invalid {_LABELS[type_name]} id" if type_name else "invalid id"
    return client_error(f"{label} {text[:40]!r}: {why}", BAD_ID)


def decode_global_id(value: str) -> tuple[str, int]:
    """(type name, row id) of a global id in its canonical spelling; BAD_ID otherwise."""
    text = str(value)
    try:
        if len(text) > MAX_GLOBAL_ID_CHARS or not text.isascii():
            raise ValueError("too long or not ASCII")
        decoded = base64.b64decode(text, validate=True).decode("ascii")
    except (ValueError, binascii.Error):
        raise _bad_id(text, "not an id this API produced") from None
    type_name, _, pk = decoded.partition(":")
    row_id = canonical_id(pk)
    if type_name not in NODE_TYPES or row_id is None or global_id(type_name, row_id) != text:
        raise _bad_id(text, "not an id this API produced")
    return type_name, row_id


def parse_id(value: strawberry.ID | str, type_name: str) -> int:
    """An id argument naming a `type_name` node, as its row id: a global id of that type, or
    (for one release) a legacy numeric id. Anything else, a global id of another type included,
    is a BAD_ID client error."""
    text = str(value)
    legacy = canonical_id(text)
    if legacy is not None:
        return legacy
    try:
        found, row_id = decode_global_id(text)
    except GraphQLError:
        raise _bad_id(
            text,
            "neither a global id from this API nor a legacy numeric id (ids are numeric "
            f"strings of ASCII digits without sign, spaces or leading zeros, at most {MAX_ID})",
            type_name,
        ) from None
    if found != type_name:
        raise _bad_id(text, f"it names a {found}, not a {type_name}", type_name)
    return row_id


def channel_row_id(text: str) -> int | None:
    """The row id of a channel named by its global id or its numeric id, else None (for the
    CLI, where the same argument may also be a channel's name)."""
    return cli_row_id(text, CHANNEL)


def cli_row_id(text: str, type_name: str) -> int | None:
    """The row id of a `type_name` node named by its global id or its numeric id, else None."""
    try:
        return parse_id(text, type_name)
    except GraphQLError:
        return None


def parse_server_id(value: strawberry.ID | None) -> int | None:
    """A server id argument: servers are no nodes, their ids stay numeric strings."""
    if value is None:
        return None
    row_id = canonical_id(str(value))
    if row_id is None:
        raise client_error(
            f"invalid server id {str(value)[:40]!r}: a numeric string of ASCII digits without "
            f"sign, spaces or leading zeros, at most {MAX_ID}",
            BAD_ID,
        )
    return row_id


def parse_optional_id(value: strawberry.ID | None, type_name: str) -> int | None:
    return parse_id(value, type_name) if value is not None else None
