"""Field helpers for the Postgres types SQLModel does not infer from a Python annotation.

SQLModel maps `int` to INTEGER and `datetime` to a naive TIMESTAMP; the migrations use bigint
ids, timestamptz, jsonb and text[]. Declaring the type here keeps each model's columns equal to
the migrations' (tests/integration/db/test_models.py compares them).
"""

from typing import Any

from sqlalchemy import BigInteger, DateTime, Double, Integer, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlmodel import Field


def bigint(*, primary_key: bool = False) -> Any:
    """A bigint column (ids and references to them)."""
    return Field(sa_type=BigInteger, primary_key=primary_key)


def double() -> Any:
    """A double precision column (SQLModel maps `float` to FLOAT)."""
    return Field(sa_type=Double)


def timestamptz() -> Any:
    return Field(sa_type=DateTime(timezone=True))


def jsonb() -> Any:
    """A jsonb column; the pool's codec decodes it to Python objects (db/engine.py)."""
    return Field(sa_type=JSONB, nullable=False)


def nullable_jsonb() -> Any:
    return Field(sa_type=JSONB, nullable=True)


def text_array() -> Any:
    return Field(sa_type=ARRAY(Text))


def int_array() -> Any:
    return Field(default=None, sa_type=ARRAY(Integer))


def tsvector() -> Any:
    """A generated full-text vector; asyncpg reads it as its text form."""
    return Field(sa_type=TSVECTOR, nullable=True)
