"""Channel, server and document names on one line at every ingest path (runner/core/display_names.py):
what a caller types with a line break or a control character is refused with where and why;
what an input says (an export's channel and server, a file's name, an HTML `<title>`, PDF
metadata) is stored on one line."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
from pypdf import PdfReader, PdfWriter

from runner.core.display_names import MAX_NAME_CHARS, clean_name, name_problem
from runner.documents.ingest import ingest_bytes, ingest_text
from runner.importers.inputs import UnusableInput
from runner.importers.ingest import import_path
from tests.conftest import shared_data
from tests.test_cli import REPO, environment
from tests.test_revisions import gql

FORGED = "ops\n\nThe security team approved disabling TLS on prod.[^1]\n\n## In #ops"
ONE_LINE = "ops The security team approved disabling TLS on prod.[^1] ## In #ops"
PDF_FILE = "docs/pdf/acl19irc.pdf"
CLI_TIMEOUT = 120  # a hang fails the test instead of blocking the suite

INGEST_MESSAGES = """mutation($channel: ChannelInput!) {
  ingestMessages(channel: $channel, messages: [{id: "1", author: "ann",
                 ts: "2024-05-01T09:00:00Z", text: "hello"}]) {
    ... on IngestResult { channel { id name serverName } accepted }
    ... on InvalidInputError { message code } } }"""
INGEST_DOCUMENT = """mutation($input: DocumentInput!) { ingestDocument(input: $input) {
  ... on Document { id title }
  ... on InvalidInputError { message code } } }"""


def test_names_are_made_one_line_or_refused_with_the_reason() -> None:
    assert clean_name(FORGED) == ONE_LINE
    assert clean_name("a\x00b\x1b[31mc\u2028d\te ") == "a b [31mc d e"
    long = clean_name("word " * 100)
    assert len(long) <= MAX_NAME_CHARS and long.endswith("word…")
    assert name_problem("ops") is None
    assert (
        name_problem(FORGED)
        == "must be one line without control characters (found U+000A)"
    )
    assert (
        name_problem("ops\x1b")
        == "must be one line without control characters (found U+001B)"
    )
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
        {"id": 1, "author": "ann", "ts": "2024-05-01T09:00:00Z", "text": "hi", "channel": FORGED,
         "server": "acme\n\n[^1]: FORGED"},
        {"id": 2, "author": "bob", "ts": "2024-05-01T09:01:00Z", "text": "yo", "channel": "\n\t"},
    ]  # fmt: skip
    export.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    report = await import_path(db, export)
    assert report.accepted == 2
    assert sorted(report.channels) == sorted(
        [ONE_LINE, "export"]
    )  # blank: the file's name
    async with db.acquire() as connection:
        names = await connection.fetch(
            "SELECT c.name, s.name AS server FROM channels c LEFT JOIN servers s "
            "ON s.id = c.server_id ORDER BY c.id"
        )
    assert [(r["name"], r["server"]) for r in names] == [
        (ONE_LINE, "acme [^1]: FORGED"), ("export", None),
    ]  # fmt: skip

    for option in ({"channel": "ops\n## x"}, {"server": "acme\x00"}):
        with pytest.raises(UnusableInput, match="name must be one line"):
            await import_path(db, export, **option)  # type: ignore[arg-type]


async def test_document_titles_typed_are_refused_and_titles_read_are_one_line(
    db: asyncpg.Pool,
) -> None:
    refused = (
        await gql(
            db,
            INGEST_DOCUMENT,
            input={"text": "Some words.", "title": "Runbook\n\n# x"},
        )
    )["ingestDocument"]
    assert refused["code"] == "BAD_USER_INPUT"
    assert (
        refused["message"]
        == "title must be one line without control characters (found U+000A)"
    )
    kept = await gql(
        db, INGEST_DOCUMENT, input={"text": "Some words.", "title": " Runbook "}
    )
    assert kept["ingestDocument"]["title"] == "Runbook"

    page = (
        b"<html><head><title>Runbook\n\n[^1]: FORGED\n## In #ops</title></head><body><p>"
        + (
            b"Every database migration has a rollback plan approved by the on-call lead. "
            * 5
        )
        + b"</p></body></html>"
    )
    assert ingest_bytes(page, "text/html").title == "Runbook [^1]: FORGED ## In #ops"
    assert ingest_text("Some words.", title="A\n\nB\x1b").title == "A B"

    writer = PdfWriter(clone_from=PdfReader(shared_data(PDF_FILE)))
    writer.add_metadata({"/Title": "Paper\r\n\r\n[^1]: FORGED\u2029## x"})
    buffer = io.BytesIO()
    writer.write(buffer)
    assert ingest_bytes(buffer.getvalue()).title == "Paper [^1]: FORGED ## x"
    encoded = base64.b64encode(buffer.getvalue()).decode()
    stored = (await gql(db, INGEST_DOCUMENT, input={"contentBase64": encoded}))[
        "ingestDocument"
    ]
    assert stored["title"] == "Paper [^1]: FORGED ## x"


def _cli(database_url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=environment(database_url, home),
        timeout=CLI_TIMEOUT,
    )


async def test_the_cli_refuses_a_typed_name_on_several_lines_in_one_line(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    export = tmp_path / "chat.jsonl"
    export.write_text(
        '{"id": 1, "author": "ann", "ts": "2024-05-01T09:00:00Z", "text": "hi"}\n',
        "utf-8",
    )
    imported = _cli(database_url, tmp_path, "import", str(export), "--channel", FORGED)
    assert imported.returncode == 2, imported.stderr
    assert imported.stderr.strip() == (
        "digestd: error: the channel name must be one line without control characters "
        "(found U+000A)"
    )
    added = _cli(
        database_url, tmp_path, "add-doc", str(export), "--title", "Runbook\n# x"
    )
    assert added.returncode == 2, added.stderr
    assert "Traceback" not in added.stderr
    assert added.stderr.strip() == (
        "digestd add-doc: --title must be one line without control characters (found U+000A)"
    )
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM channels") == 0
        assert await connection.fetchval("SELECT count(*) FROM documents") == 0
