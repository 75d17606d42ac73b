"""`digestd add-doc` as a user runs it (a real process, a real PDF, the test Postgres): ingest,
digest with --query --wait and print it as Markdown, with --json the payload whose locators
slice the stored text; again is a cache hit; an encrypted PDF and a hostile URL end with a clear error and exit code 2."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import asyncpg

from runner.documents.locators import resolve_locator
from tests.support.paths import REPO_ROOT, shared_data


async def digestd(
    database_url: str, home: Path, *args: str, settings: dict[str, str] | None = None
) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIGEST_", "DIGESTD_"))}
    env.update(DATABASE_URL=database_url, DIGESTD_HOME=str(home), DIGEST_EXTRACTOR="offline")
    env.update(settings or {})
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        *args,
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_add_doc_digests_a_real_pdf(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    pdf = shared_data("docs/pdf/pdflatex-4-pages.pdf")
    query = "How are the pages of this document laid out?"
    code, out, err = await digestd(
        database_url, tmp_path, "add-doc", str(pdf), "--query", query, "--wait"
    )
    assert code == 0, err
    first_line, _, markdown = out.partition("\n")
    assert first_line.startswith("document 1 (stored): application/pdf") and "4 pages" in first_line
    # Markdown like a channel digest's, not the payload's JSON: the query, the summary, and
    # each evidence snippet quoted with its locator.
    assert markdown.startswith("# ") and not markdown.lstrip().startswith("{")
    assert f"query: {query}" in markdown and "## Evidence" in markdown
    shown_locators = re.findall(
        r"\((page:\d+:char:\d+-\d+), relevance \d\.\d{3}\)$", markdown, re.M
    )
    assert shown_locators and "digested" in err

    # --json keeps the payload, whose locators slice the stored text; again is a cache hit.
    code, out, err = await digestd(
        database_url, tmp_path, "add-doc", str(pdf), "--query", query, "--wait", "--json"
    )
    assert code == 0 and out.endswith("}\n"), err
    payload = json.loads(out)["payload"]
    assert payload["content_type"] == "digest/v1" and payload["summary"]
    async with db.acquire() as connection:
        row = await connection.fetchrow(
            "SELECT canonical_text, page_spans FROM documents WHERE id = 1"
        )
    spans = [tuple(span) for span in row["page_spans"]]
    assert payload["source_text_hash"] in first_line
    assert [snippet["locator"] for snippet in payload["evidence_snippets"]] == shown_locators
    for snippet in payload["evidence_snippets"]:
        start, end = resolve_locator(snippet["locator"], row["canonical_text"], spans)
        assert row["canonical_text"][start:end] == snippet["text"]
    assert json.loads(out)["job"]["stats"]["cache_hit"] is True

    code, again, err = await digestd(
        database_url, tmp_path, "add-doc", str(pdf), "--query", query, "--wait"
    )
    assert code == 0 and again.startswith("document 1 (already stored)"), err
    assert again.partition("\n")[2] == markdown
    assert "served from the cache" in err

    encrypted = shared_data("docs/pdf/tricky_encrypted_libreoffice-writer-password.pdf")
    code, out, err = await digestd(database_url, tmp_path, "add-doc", str(encrypted))
    assert code == 2 and "encrypted: the PDF is encrypted; give its password" in err
    code, out, err = await digestd(
        database_url, tmp_path, "add-doc", "http://169.254.169.254/latest"
    )
    assert code == 2 and "blocked_address" in err and "metadata" in err


BACKUPS = (
    "Nightly backups of the billing database are kept for thirty days. The retention of each "
    "backup is checked by the restore drill every Monday, and a failed restore pages the on-call."
)


async def test_add_doc_with_several_documents_digests_the_best_for_the_query(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    sources = {
        "backups.txt": BACKUPS,
        "restore.txt": "The restore drill restores last night's backup into staging and "
        "checks the row counts. Backups older than the retention window are deleted.",
        "lunch.txt": "The canteen serves soup on Tuesdays and the coffee machine is on floor 3.",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    query = "How long are backups kept and how is their retention checked?"
    code, out, err = await digestd(
        database_url,
        tmp_path,
        "add-doc",
        *(str(tmp_path / name) for name in sources),
        "--query",
        query,
        "--wait",
        settings={"DIGESTD_DOC_MAX_SOURCES": "2", "DIGESTD_DOC_MIN_CHARS": "0"},
    )
    assert code == 0, err
    stored = re.findall(r"^document (\d+) \(stored\): (\S+)$", out, re.M)
    assert [Path(source).name for _, source in stored] == list(sources)
    ids = {Path(source).name: number for number, source in stored}
    # The two about backups are digested, best first; the canteen is named with why not.
    assert f"document {ids['lunch.txt']} not digested: max_sources" in err, err
    digested = re.findall(r"^job \d+ \w+: document (\d+)$", err, re.M)
    assert sorted(digested) == sorted([ids["backups.txt"], ids["restore.txt"]]), err
    titles = re.findall(r"^# (.+)$", out, re.M)
    assert sorted(titles) == ["backups.txt", "restore.txt"], out
    assert out.count(f"query: {query}") == 2

    code, out, err = await digestd(
        database_url, tmp_path, "add-doc", str(tmp_path / "backups.txt"), "nowhere.txt"
    )
    assert code == 2 and "nowhere.txt is neither a file nor a URL" in err
