"""Shared helpers for the importer tests (no tests here)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from runner.importers.records import ParsedMessage, Record, RecordError
from tests.support.paths import DATA_DIR

DATA = DATA_DIR / "chat"
FIVE_MB = "x" * (5 * 1024 * 1024)


def chat_file(relative: str) -> Path:
    """A real export under ../shared/data/chat, or skip when the shared data is absent."""
    path = DATA / relative
    if not path.exists():
        pytest.skip(
            f"shared data file {path} is absent (tests read ../shared/data beside the repo)"
        )
    return path


def split(records: Iterable[Record]) -> tuple[list[ParsedMessage], list[RecordError]]:
    messages: list[ParsedMessage] = []
    errors: list[RecordError] = []
    for record in records:
        (errors if isinstance(record, RecordError) else messages).append(record)  # type: ignore[arg-type]
    return messages, errors


def error_at(errors: list[RecordError], location: str) -> RecordError:
    found = [error for error in errors if error.location == location]
    assert found, f"no error at {location!r}; errors: {errors}"
    return found[0]


def message_at(messages: list[ParsedMessage], location: str) -> ParsedMessage:
    found = [message for message in messages if message.location == location]
    assert found, f"no message at {location!r}; locations: {[m.location for m in messages]}"
    return found[0]
