"""A person's catch-up exported as a file, over the Gitter docker room of ../shared/data digested
offline: `digestd export catchup` writes the Markdown `digestd catchup` prints, the HTML with its
footnotes and the JSON; the download route gives the same files behind the API's tokens."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx

from db import channels as channel_queries
from runner.exports.store import FORMATS, export_catch_up
from tests.support.cli import run_cli
from tests.support.exports import digested_docker_room, parse_page
from tests.support.paths import shared_data

# Active in the room and addressed by name: questions and mentions wait on them.
PERSON = "galvesribeiro"
SINCE = "2000-01-01T00:00:00Z"
READER = {"authorization": "Bearer reader-token-1"}


def test_digestd_export_catchup_writes_the_cited_catch_up_as_md_html_and_json(
    database_url: str, tmp_path: Path
) -> None:
    """The room imported and digested as a user does, then the catch-up exported."""
    home = tmp_path / "home"

    def cli(*args: str) -> tuple[int, str, str]:
        result = run_cli(database_url, home, *args)
        return result.returncode, result.stdout, result.stderr

    room = shared_data("chat/gitter/manual_docker.txt")
    assert cli("import", str(room), "--channel", "docker")[0] == 0
    code, out, err = cli("digest", "docker", "--wait", "--json")
    assert code == 0, err

    code, printed, err = cli("catchup", PERSON, "--since", SINCE)
    assert code == 0, err
    code, markdown, err = cli("export", "catchup", PERSON, "--since", SINCE)
    assert code == 0, err
    # The same catch-up as `digestd catchup` prints, but for the moment it was made at.
    assert markdown.splitlines()[0] == printed.splitlines()[0] == f"# Catch-up for {PERSON}"
    assert markdown.splitlines()[4:] == printed.splitlines()[4:]

    target = tmp_path / "catchup.html"
    code, out, err = cli("export", "catchup", PERSON, "--since", SINCE, "--format", "html",
                         "-o", str(target))  # fmt: skip
    assert code == 0 and out == "", err
    assert err.strip() == f"catch-up of {PERSON!r} written to {target} (html)"
    page = parse_page(target.read_text(encoding="utf-8"))
    notes = [a["id"] for a in page.named("li") if (a.get("id") or "").startswith("fn-")]
    assert notes and notes == [f"fn-{n}" for n in range(1, len(notes) + 1)]
    assert page.named("script") == [] and not any(a.get("src") for _, a in page.tags)

    code, out, err = cli("export", "catchup", PERSON, "--since", SINCE, "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["format"] == "digestd.catchup/1"
    assert [c["channelName"] for c in document["catchup"]["channels"]] == ["docker"]
    assert len(document["footnotes"]) == len(notes)

    assert cli("export", "catchup", PERSON, "--since", "yesterday") == (
        2,
        "",
        "digestd export: --since 'yesterday' is neither a duration (30m, 12h, 2d, 1w) nor an "
        "ISO 8601 time\n",
    )
    code, out, err = cli("export", "catchup", "-")
    assert code == 2 and out == "" and "handle of at least" in err
    code, out, err = cli("export", "digest", "1", "--since", "2d")
    assert code == 2 and "--since is for `export catchup` only" in err


async def test_the_catch_up_route_downloads_behind_the_tokens(
    db: asyncpg.Pool, database_url: str, api: httpx.AsyncClient
) -> None:
    channel, _ = await digested_docker_room(db, database_url)
    path = f"/export/catchups/{PERSON}"
    refused = await api.get(f"{path}.html", params={"since": SINCE})
    assert refused.status_code == 401

    for fmt in FORMATS:
        got = await api.get(f"{path}.{fmt}", params={"since": SINCE}, headers=READER)
        assert got.status_code == 200, got.text
        assert got.headers["content-disposition"] == (
            f'attachment; filename="digestd-catchup-{PERSON}.{fmt}"'
        )
        assert got.headers["x-content-type-options"] == "nosniff"
        if fmt == "json":
            body = got.json()
            assert body["format"] == "digestd.catchup/1" and body["footnotes"]
            moment = datetime.fromisoformat(body["catchup"]["createdAt"])
            async with db.acquire() as connection:
                again = await export_catch_up(
                    connection, PERSON, datetime(2000, 1, 1, tzinfo=UTC), "json", now=moment
                )
            assert json.loads(again.content) == body
            # Every quote is the cited message's words, said by its author, in that room.
            async with db.acquire() as connection:
                ids = [note["messageId"] for note in body["footnotes"]]
                messages = await channel_queries.messages_by_external_ids(connection, channel, ids)
            by_id = {m.external_id: m for m in messages}
            for note in body["footnotes"]:
                message = by_id[note["messageId"]]
                assert note["author"] == message.author and note["channel"] == "docker"
                assert note["quotes"][0]["text"] in message.normalized_text
    html = await api.get(f"{path}.html", params={"since": SINCE}, headers=READER)
    assert "default-src 'none'" in html.headers["content-security-policy"]
    assert f"Catch-up for {PERSON}" in parse_page(html.text).text

    bad_since = await api.get(f"{path}.json", params={"since": "soon"}, headers=READER)
    assert bad_since.status_code == 400
    assert bad_since.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT"}
    bad_format = await api.get(f"{path}.exe", headers=READER)
    assert bad_format.status_code == 400
    bad_name = await api.get("/export/catchups/-.md", headers=READER)
    assert bad_name.status_code == 400 and "handle" in bad_name.json()["errors"][0]["message"]
