"""GraphQL types more than one area of the API returns: flags, and the error members of result
unions."""

from __future__ import annotations

from typing import Any

import strawberry


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


@strawberry.type
class NotFoundError:
    message: str


@strawberry.type
class InvalidInputError:
    message: str
    code: str | None = strawberry.field(
        default=None, description="A stable code to branch on (encrypted, blocked_address, ...)."
    )
