"""The DateTime scalar, with its range checked where the input enters.

Strawberry's DateTime accepts any ISO 8601 value, but `9999-12-31T23:00:00-14:00` is a valid
datetime whose UTC instant is past year 9999: Python cannot represent it, and the database
driver fails deep inside a query. Here every input is brought to UTC at coercion (naive values
are UTC, as everywhere in digestd), so an out-of-range one is a clear client error.
"""

from __future__ import annotations

from datetime import UTC, datetime

import dateutil.parser
from strawberry.exceptions import StrawberryInputCoercionError
from strawberry.schema.types.base_scalars import DateTimeDefinition
from strawberry.types.scalar import ScalarDefinition

from schema.errors import BAD_USER_INPUT, VALIDATION

MAX_DATETIME_CHARS = 64


def _refused(message: str, code: str = BAD_USER_INPUT) -> StrawberryInputCoercionError:
    """A refused DateTime; the code travels inside graphql-core's error about the variable."""
    return StrawberryInputCoercionError(message, extensions={"code": code})


def parse_datetime(value: object) -> datetime:
    if not isinstance(value, str):
        raise _refused(
            f"DateTime must be an ISO 8601 string, not {type(value).__name__}", VALIDATION
        )
    if len(value) > MAX_DATETIME_CHARS:
        raise _refused(f"DateTime is over {MAX_DATETIME_CHARS} characters")
    try:
        parsed: datetime = dateutil.parser.isoparse(value)
    except (ValueError, OverflowError):
        raise _refused(
            f"DateTime {value!r} is not an ISO 8601 date-time (e.g. 2024-05-01T12:00:00Z)"
        ) from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise _refused(
            f"DateTime {value!r} is out of range: in UTC it must fall within years 1 to 9999"
        ) from None


DATETIME = ScalarDefinition(
    name=DateTimeDefinition.name,
    description=DateTimeDefinition.description,
    specified_by_url=DateTimeDefinition.specified_by_url,
    serialize=DateTimeDefinition.serialize,
    parse_value=parse_datetime,
    parse_literal=None,
    origin=datetime,
)
