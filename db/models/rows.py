"""Records to models, in one place: how every db/ function turns what asyncpg returns into the
typed rows of db/models.

`model_construct` fills a model from a record without validating: the database already
enforces the types, and a keyset page builds up to a hundred rows per request. Measured by
bench/rows.py on a 100-row page of messages (docs/benchmarks.md): `model_construct` costs about
6 µs a row, `model_validate` and a table model's `__init__` (SQLAlchemy's instrumentation)
about ten times that.

The rows are read-only values, as the records were: they are never added to a SQLAlchemy
session (they carry no session state, and setting an attribute of a table row raises).
"""

from collections.abc import Iterable
from typing import TypeVar

import asyncpg
from pydantic import BaseModel

# SQLModel classes, table or not (and any pydantic model).
RowModel = TypeVar("RowModel", bound=BaseModel)


def as_row(model: type[RowModel], record: asyncpg.Record) -> RowModel:
    """The model of one record (its columns are the model's fields)."""
    return model.model_construct(**record)


def as_row_or_none(model: type[RowModel], record: asyncpg.Record | None) -> RowModel | None:
    return None if record is None else model.model_construct(**record)


def as_rows(model: type[RowModel], records: Iterable[asyncpg.Record]) -> list[RowModel]:
    construct = model.model_construct
    return [construct(**record) for record in records]
