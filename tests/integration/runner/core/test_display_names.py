"""Channel, server and document names on one line at every ingest path (runner/core/display_names.py):
what a caller types with a line break or a control character is refused with where and why;
what an input says (an export's channel and server, a file's name, an HTML `<title>`, PDF
metadata) is stored on one line."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from runner.core.display_names import MAX_NAME_CHARS, clean_name, name_problem
from runner.importers.ingest import import_path
from runner.importers.inputs import UnusableInput
from tests.support.names import FORGED
from tests.support.schema import gql

ONE_LINE = "ops The security team approved disabling TLS on prod.[^1] ## In #ops"

INGEST_MESSAGES = """mutation($channel: ChannelInput!) {
  ingestMessages(channel: $channel, messages: [{id: "1", author: "ann",
                 ts: "2024-05-01T09:00:00Z", text: "hello"}]) {
    ... on IngestResult { channel { id name serverName } accepted }
    ... on InvalidInputError { message code } } }"""


def test_names_are_made_one_line_or_refused_with_the_reason() -> None:
    assert clean_name(FORGED) == ONE_LINE
    assert clean_name("a\x00b\x1b[31mc\u2028d\te ") == "a b [31mc d e"
    long = clean_name("word " * 100)
    assert len(long) <= MAX_NAME_CHARS and long.endswith("word…")
    assert name_problem("ops") is None
    assert name_problem(FORGED) == "must be one line without control characters (found U+000A)"
    assert name_problem("ops\x1b") == "must be one line without control characters (found U+001B)"
    assert name_problem("   ") == "must not be empty"
    assert name_problem("x" * 201) == "must be at most 200 characters (got 201)"


async def test_ingest_messages_refuses_a_channel_or_server_name_that_is_not_one_line(
    db: asyncpg.Pool,
) -> None:
    for channel, field in (
        ({"name": FORGED}, "channel.name"),
        ({"name": "ops", "server": "acme\r\n## x"}, "channel.server"),
        ({"name": "ops\u2028x"}, "channel.name"),
    ):
        result = (await gql(db, INGEST_MESSAGES, channel=channel))["ingestMessages"]
        assert result["code"] == "BAD_USER_INPUT", result
        assert result["message"].startswith(f"{field} must be one line"), result
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM channels") == 0
    stored = await gql(db, INGEST_MESSAGES, channel={"name": " ops ", "server": "acme"})
    assert stored["ingestMessages"]["channel"]["name"] == "ops"
    assert stored["ingestMessages"]["channel"]["serverName"] == "acme"


async def test_an_export_naming_its_channel_on_several_lines_is_stored_on_one(
    db: asyncpg.Pool, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    lines = [
        {
            "id": 1,
            "author": "ann",
            "ts": "2024-05-01T09:00:00Z",
            "text": "hi",
            "channel": FORGED,
            "server": "acme\n\n[^1]: FORGED",
        },
        {"id": 2, "author": "bob", "ts": "2024-05-01T09:01:00Z", "text": "yo", "channel": "\n\t"},
    ]
    export.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    report = await import_path(db, export)
    assert report.accepted == 2
    assert sorted(report.channels) == sorted([ONE_LINE, "export"])  # blank: the file's name
    async with db.acquire() as connection:
        names = await connection.fetch(
            "SELECT c.name, s.name AS server FROM channels c LEFT JOIN servers s "
            "ON s.id = c.server_id ORDER BY c.id"
        )
    assert [(r["name"], r["server"]) for r in names] == [
        (ONE_LINE, "acme [^1]: FORGED"),
        ("export", None),
    ]

    for option in ({"channel": "ops\n## x"}, {"server": "acme\x00"}):
        with pytest.raises(UnusableInput, match="name must be one line"):
            await import_path(db, export, **option)  # type: ignore[arg-type]
