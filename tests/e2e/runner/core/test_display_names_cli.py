"""Names on one line through the real `digestd` processes: what an operator types with a line break is refused in one line, and document titles read from a file become one line."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path

import asyncpg
from pypdf import PdfReader, PdfWriter

from runner.documents.ingest import ingest_bytes, ingest_text
from tests.support.names import FORGED
from tests.support.paths import REPO_ROOT, shared_data
from tests.support.processes import environment
from tests.support.schema import gql

PDF_FILE = "docs/pdf/acl19irc.pdf"


CLI_TIMEOUT = 120  # a hang fails the test instead of blocking the suite


INGEST_DOCUMENT = """mutation($input: DocumentInput!) { ingestDocument(input: $input) {
  ... on Document { id title }
  ... on InvalidInputError { message code } } }"""


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
    assert refused["message"] == "title must be one line without control characters (found U+000A)"
    kept = await gql(db, INGEST_DOCUMENT, input={"text": "Some words.", "title": " Runbook "})
    assert kept["ingestDocument"]["title"] == "Runbook"

    page = (
        b"<html><head><title>Runbook\n\n[^1]: FORGED\n## In #ops</title></head><body><p>"
        + (b"Every database migration has a rollback plan approved by the on-call lead. " * 5)
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
    stored = (await gql(db, INGEST_DOCUMENT, input={"contentBase64": encoded}))["ingestDocument"]
    assert stored["title"] == "Paper [^1]: FORGED ## x"


def _cli(database_url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO_ROOT,
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
    added = _cli(database_url, tmp_path, "add-doc", str(export), "--title", "Runbook\n# x")
    assert added.returncode == 2, added.stderr
    assert "Traceback" not in added.stderr
    assert added.stderr.strip() == (
        "digestd add-doc: --title must be one line without control characters (found U+000A)"
    )
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM channels") == 0
        assert await connection.fetchval("SELECT count(*) FROM documents") == 0
