"""Exports of a real digest and report (the Gitter docker room of ../shared/data, digested and
reported on offline): the files' contents against the stored rows, `digestd export` writing them
to a file or stdout, and the download route behind the API's tokens."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import asyncpg
import httpx

from db import channels as channel_queries
from db import digests as digest_queries
from runner.exports.markdown import render_digest
from runner.exports.store import FORMATS, export_file
from schema.types.ids import DIGEST, REPORT, global_id
from tests.support.cli import run_cli
from tests.support.database import row_id
from tests.support.exports import digested_docker_room, parse_page, report_on
from tests.support.paths import shared_data

QUESTION = "How do I run docker containers?"
READER = {"authorization": "Bearer reader-token-1"}


async def test_a_real_digest_exports_its_sentences_items_and_the_quotes_it_cites(
    db: asyncpg.Pool, database_url: str
) -> None:
    _, digest_id = await digested_docker_room(db, database_url)
    async with db.acquire() as connection:
        as_json = await export_file(connection, "digest", digest_id, "json")
        as_html = await export_file(connection, "digest", digest_id, "html")
        as_md = await export_file(connection, "digest", digest_id, "md")
        markdown = await render_digest(connection, digest_id)
        digest = await digest_queries.digest_by_id(connection, digest_id)
        assert as_json and as_html and as_md and digest
        document = json.loads(as_json.content)
        ids = [note["messageId"] for note in document["footnotes"]]
        messages = await channel_queries.messages_by_external_ids(
            connection, digest.channel_id, ids
        )
    assert as_md.content == markdown + "\n"
    assert document["format"] == "digestd.digest/1"
    body = document["digest"]
    assert body["id"] == global_id(DIGEST, digest_id) and body["channel"] == "docker"
    assert body["overview"] and body["messageCount"] == digest.message_count
    assert len(body["overview"]) == len(digest.overview_sentences)
    assert len(body["highlights"]) == len(digest.highlight_sentences)
    footnotes = document["footnotes"]
    assert footnotes and [n["number"] for n in footnotes] == list(range(1, len(footnotes) + 1))
    cited = {n for s in body["overview"] + body["highlights"] for n in s["citations"]}
    cited |= {n for p in body["periods"] for s in p["sentences"] for n in s["citations"]}
    assert cited == {n["number"] for n in footnotes}
    # Each quote is verbatim words of the message it names, said by its author.
    by_id = {m.external_id: m for m in messages}
    for note in footnotes:
        message = by_id[note["messageId"]]
        assert note["author"] == message.author and note["channel"] == "docker"
        assert note["quotes"][0]["text"] and note["quotes"][0]["text"] in message.normalized_text
    # The HTML shows the same footnotes, each reference a link to one of them.
    page = parse_page(as_html.content)
    notes = [a["id"] for a in page.named("li") if (a.get("id") or "").startswith("fn-")]
    assert notes == [f"fn-{n['number']}" for n in footnotes]
    references = {a["href"] for a in page.named("a") if (a.get("href") or "").startswith("#fn-")}
    assert references == {f"#{n}" for n in notes}
    assert page.named("script") == [] and not any(a.get("src") for _, a in page.tags)
    assert as_html.filename == f"digestd-digest-{digest_id}.html"


def test_digestd_export_writes_a_digest_or_report_to_a_file_or_stdout(
    database_url: str, tmp_path: Path
) -> None:
    """Made as a user makes them (import, digest, report), then exported by id."""
    home = tmp_path / "home"
    channel = f"docker-{uuid.uuid4().hex[:8]}"

    def cli(*args: str) -> tuple[int, str, str]:
        result = run_cli(database_url, home, *args)
        return result.returncode, result.stdout, result.stderr

    room = shared_data("chat/gitter/manual_docker.txt")
    assert cli("import", str(room), "--channel", channel)[0] == 0
    code, out, err = cli("digest", channel, "--wait", "--json")
    assert code == 0, err
    digest = json.loads(out)["job"]["digestId"]
    code, out, err = cli("report", QUESTION, "--channel", channel, "--wait", "--json")
    assert code == 0, err
    report = json.loads(out)["report"]

    target = tmp_path / "digest.html"
    code, out, err = cli("export", "digest", digest, "--format", "html", "-o", str(target))
    assert code == 0 and out == "", err
    digest_id = row_id(digest)
    assert err.strip() == f"digest {digest_id} written to {target} (html)"
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    code, out, err = cli("export", "digest", str(digest_id), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["digest"]["id"] == digest

    code, out, err = cli("export", "report", report["id"])
    assert code == 0, err
    assert out == report["markdown"] + "\n"  # Markdown by default, as `digestd show` prints it

    written = tmp_path / "r.json"
    code, out, err = cli("export", "report", report["id"], "--format", "json", "-o", str(written))
    exported = json.loads(written.read_text(encoding="utf-8"))
    assert code == 0 and exported["format"] == "digestd.report/1"
    assert exported["report"]["question"] == QUESTION and exported["report"]["sections"]
    assert all(note["quotes"] for note in exported["footnotes"])

    # The errors of `digestd show`: an unknown id exits 1, a malformed one 2, nothing on stdout.
    assert cli("export", "digest", "999999", "--format", "html") == (
        1,
        "",
        "digestd export: no digest 999999\n",
    )
    assert cli("export", "digest", report["id"]) == (
        2,
        "",
        f"digestd export: {report['id']!r} is not a digest id\n",
    )
    code, out, err = cli("export", "digest", digest, "-o", str(tmp_path / "missing" / "d.md"))
    assert code == 2 and out == "" and "is not a directory" in err


async def test_the_export_route_downloads_behind_the_tokens_with_safe_headers(
    db: asyncpg.Pool, database_url: str, api: httpx.AsyncClient
) -> None:
    channel, digest_id = await digested_docker_room(db, database_url)
    report_id = await report_on(db, database_url, channel, QUESTION)
    digest = global_id(DIGEST, digest_id)

    refused = await api.get(f"/export/digests/{digest}.html")
    assert refused.status_code == 401 and refused.json()["errors"][0]["extensions"] == {
        "code": "UNAUTHENTICATED"
    }
    # A browser's page request is no way around the token (GraphiQL's page is at /graphql).
    page_like = await api.get(f"/export/digests/{digest}.html", headers={"accept": "text/html"})
    assert page_like.status_code == 401

    expected = {
        "html": "text/html; charset=utf-8",
        "json": "application/json",
        "md": "text/markdown; charset=utf-8",
    }
    async with db.acquire() as connection:
        for fmt in FORMATS:
            got = await api.get(f"/export/digests/{digest}.{fmt}", headers=READER)
            assert got.status_code == 200, got.text
            assert got.headers["content-type"] == expected[fmt]
            assert got.headers["content-disposition"] == (
                f'attachment; filename="digestd-digest-{digest_id}.{fmt}"'
            )
            assert got.headers["x-content-type-options"] == "nosniff"
            exported = await export_file(connection, "digest", digest_id, fmt)
            assert exported is not None and got.text == exported.content
    html = await api.get(f"/export/digests/{digest}.html", headers=READER)
    assert "default-src 'none'" in html.headers["content-security-policy"]

    report = await api.get(f"/export/reports/{global_id(REPORT, report_id)}.json", headers=READER)
    assert report.status_code == 200 and report.json()["format"] == "digestd.report/1"
    assert report.headers["content-disposition"].endswith(f'"digestd-report-{report_id}.json"')

    unknown = await api.get(f"/export/digests/{global_id(DIGEST, 999999)}.json", headers=READER)
    assert unknown.status_code == 404
    assert unknown.json()["errors"][0]["extensions"] == {"code": "NOT_FOUND"}
    bad_format = await api.get(f"/export/digests/{digest}.exe", headers=READER)
    assert bad_format.status_code == 400
    assert bad_format.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT"}
    no_format = await api.get(f"/export/digests/{digest}", headers=READER)
    assert no_format.status_code == 400
    wrong_type = await api.get(f"/export/digests/{global_id(REPORT, report_id)}.md", headers=READER)
    assert wrong_type.status_code == 400
    assert wrong_type.json()["errors"][0]["extensions"] == {"code": "BAD_ID"}
