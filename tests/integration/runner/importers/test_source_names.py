"""Names a person would pick, through the import and ingest paths to a report: an IRC log
imported without `--channel` is the channel its join lines name (else its file's name without
`.raw.txt`), an explicit channel still wins, and an HTML page without a `<title>` is titled by its
first heading, a document naming nothing by its file's name; the report's sections and footnotes
then say those names, never `document N`."""

from __future__ import annotations

import uuid
from pathlib import Path

import asyncpg

from db.documents import store_document
from runner.documents.ingest import ingest_bytes
from runner.importers.ingest import import_path
from schema.types.ids import CHANNEL, DOCUMENT, global_id
from tests.support.reports import _report


def _log(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_imports_and_documents_are_named_as_a_person_would(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    said = [
        "[09:01] <ana> the freezer migration needs a rollback plan before Friday",
        "[09:02] <bo> the on-call lead approves every freezer migration rollback",
    ]
    joined = _log(
        tmp_path / f"2024-05-03_09-{tag}.raw.txt",
        f"[09:00] -!- ana [~ana@host] has joined #Freezer-{tag}",
        f"[09:00] -!- Topic for #freezer-{tag}: migrations this week",
        *said,
    )
    plain = _log(tmp_path / f"2024-05-03_10-{tag}.raw.txt", *said)
    from_joins = await import_path(db, joined)
    from_file = await import_path(db, plain)
    explicit = await import_path(db, joined, channel=f"typed-{tag}")
    assert list(from_joins.channels) == [f"Freezer-{tag}"]
    assert list(from_file.channels) == [f"2024-05-03_10-{tag}"]
    assert list(explicit.channels) == [f"typed-{tag}"]

    page = (
        f"<html><body><h2>Freezer runbook {tag}</h2><p>Every freezer migration rollback is "
        "approved by the on-call lead, who checks the rollback plan first.</p></body></html>"
    )
    notes = f"Freezer notes {tag}: a freezer migration rollback waits for the on-call lead."
    async with db.acquire() as connection:
        runbook, _ = await store_document(
            connection, ingest_bytes(page.encode(), "text/html", file_name="x.html").as_record()
        )
        named, _ = await store_document(
            connection,
            ingest_bytes(notes.encode(), "text/plain", file_name=f"notes-{tag}.txt").as_record(),
        )
    assert (runbook.title, named.title) == (f"Freezer runbook {tag}", f"notes-{tag}.txt")

    sources = {
        "channelIds": [global_id(CHANNEL, from_joins.channels[f"Freezer-{tag}"])],
        "documentIds": [global_id(DOCUMENT, runbook.id), global_id(DOCUMENT, named.id)],
    }
    done = await _report(db, database_url, "Who approves a freezer migration rollback?", sources)
    report = done["report"]
    shown = {s["channelName"] or s["documentTitle"] for s in report["sources"]}
    assert shown == {f"Freezer-{tag}", f"Freezer runbook {tag}", f"notes-{tag}.txt"}, shown
    markdown = report["markdown"]
    # Sections and footnotes open with the names; `(document N)` after a quote is its id. (Each
    # source says one thing here, so the answer may quote them all and leave no section.)
    sections = [line[6:] for line in markdown.splitlines() if line.startswith("## In ")]
    assert all(
        name.startswith((f"#Freezer-{tag}", f"Freezer runbook {tag}", f"notes-{tag}.txt"))
        for name in sections
    ), sections
    assert "## In document" not in markdown
    footnotes = [line for line in markdown.splitlines() if line.startswith("[^")]
    assert footnotes and all(
        line.split(": ", 1)[1].startswith(
            (f"#Freezer-{tag}, ", f"Freezer runbook {tag}, ", f"notes-{tag}.txt, ")
        )
        for line in footnotes
    ), footnotes
