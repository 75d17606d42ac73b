"""GraphQL types more than one area of the API returns: flags, and the error members of result
unions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry
from graphql import GraphQLError

from runner.triggers import SubjectNotFound, TriggerRefused
from schema.errors import BAD_ID, BAD_USER_INPUT, NOT_FOUND
from schema.types.ids import parse_id


@strawberry.type
class Flag:
    """A warning or validation flag: a stable code and a human message."""

    code: str
    message: str

    @classmethod
    def many(cls, values: list[dict[str, Any]]) -> list[Flag]:
        return [cls(code=str(v.get("code", "")), message=str(v.get("message", ""))) for v in values]


@strawberry.type
class RecordError:
    location: str
    reason: str


@strawberry.type(description="No object with the id given (code NOT_FOUND).")
class NotFoundError:
    message: str = strawberry.field(description="Which id named nothing, as the client sent it.")
    code: str = strawberry.field(default=NOT_FOUND, description="Always NOT_FOUND.")
    id: strawberry.ID | None = strawberry.field(
        default=None, description="The id that named nothing, exactly as it was sent."
    )


@strawberry.type(description="An argument the mutation refuses; `message` says which and why.")
class InvalidInputError:
    message: str
    code: str = strawberry.field(
        default=BAD_USER_INPUT,
        description="A code of the API's one list (docs/api-errors.md): BAD_ID or BAD_USER_INPUT.",
    )
    reason: str | None = strawberry.field(
        default=None,
        description="Why a document or a digest was refused, where the pipeline names it, in "
        "lowercase: encrypted, no_text_layer, blocked_address, invalid_window, "
        "not_eligible:<why>, ... (docs/api-errors.md lists them); null otherwise.",
    )


def parse_id_or_error(value: strawberry.ID, type_name: str) -> int | InvalidInputError:
    """A mutation's id argument naming a `type_name` node (schema/types/ids.py parse_id: a global id
    of that type, or a legacy numeric one) as its row id, or the typed error (BAD_ID) to return:
    a malformed id, or one of another type, is an expected failure of a mutation, like an
    unknown one."""
    try:
        return parse_id(value, type_name)
    except GraphQLError as error:
        return InvalidInputError(message=error.message, code=BAD_ID)


# The ids a mutation was sent, by (subject, row id): ("channel", 7) -> "Q2hhbm5lbDo3".
SentIds = Mapping[tuple[str, int], str]


def not_found(subject: str, sent: str) -> NotFoundError:
    """No `subject` ("channel", "job", ...) has the id the client sent, named as it was sent: a
    client that sent a global id must find that id in the message, not a row number."""
    return NotFoundError(message=f"no {subject} with id {sent}", id=strawberry.ID(sent))


def refusal(refused: TriggerRefused, sent: SentIds) -> NotFoundError | InvalidInputError:
    """A trigger's refusal as the typed result a mutation returns: a missing subject is a
    `NotFoundError` naming the id the client sent for it (`sent`), anything else an
    `InvalidInputError` with the refusal's code."""
    if isinstance(refused, SubjectNotFound):
        given = sent.get((refused.subject, refused.row_id))
        if given is None:  # a subject the mutation's arguments did not name: no id to echo
            return NotFoundError(message=f"no such {refused.subject}")
        return not_found(refused.subject, given)
    return InvalidInputError(message=refused.message, reason=refused.code)
