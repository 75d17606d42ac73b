"""importChatExport through the real HTTP /graphql over PostgreSQL: an upload is imported as
`digestd import` imports the file (format detected or given, bad records rejected with where
and why, the good ones stored), readers are refused, and an input that cannot be read is a
typed error naming the upload, never the server's temporary path."""

from __future__ import annotations

import io
import json
import stat
import tempfile
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.manage import IMPORT, READER, ROLE_TOKENS, WRITER, export_input, post
from tests.support.paths import SAMPLE
from tests.support.servers import running_server

IRC_LOG = b"""[09:00] <ana> the deploy of the billing service failed at the migration step
[09:01] <kenji> ana: run `make migrate-status` first, it shows the stuck lock
[09:02] * lena has joined #ops
[09:03] <ana> that worked, thanks
"""


@pytest.fixture
async def http(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(update={"digestd_api_tokens": SecretStr(ROLE_TOKENS)})
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as client,
    ):
        yield client


async def _import(http: httpx.AsyncClient, content: bytes, **fields: object) -> dict[str, Any]:
    result: dict[str, Any] = (
        await gql(http, IMPORT, {"input": export_input(content, **fields)}, WRITER)
    )["importChatExport"]
    return result


async def test_a_jsonl_upload_keeps_the_good_records_and_says_where_the_bad_one_is(
    http: httpx.AsyncClient, db: asyncpg.Pool
) -> None:
    lines = SAMPLE.read_bytes().splitlines()
    broken = json.dumps({"id": "bad-1", "author": "x", "text": "no timestamp"}).encode()
    content = b"\n".join([*lines[:5], broken, *lines[5:]]) + b"\n"
    result = await _import(http, content, fileName="team.jsonl", channelName="uploaded-team")
    assert result["__typename"] == "ChatImport", result
    assert result["format"] == "jsonl" and result["formatDetected"] is True
    assert result["accepted"] == len(lines) == result["inserted"], result
    assert result["rejected"] == 1 and result["stopped"] is None
    [error] = result["errors"]
    assert error["location"] == "line 6" and "ts" in error["reason"], error
    assert result["channels"] == [
        {"id": result["channels"][0]["id"], "name": "uploaded-team", "messageCount": len(lines)}
    ]
    assert result["message"].startswith(f"imported team.jsonl (jsonl): {len(lines)} accepted")

    again = await _import(http, content, fileName="team.jsonl", channelName="uploaded-team")
    assert again["inserted"] == 0 and again["unchanged"] == len(lines), again
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM messages") == len(lines)


async def test_an_irc_log_is_named_after_its_channel_or_file_and_its_join_lines_are_skipped(
    http: httpx.AsyncClient,
) -> None:
    # The log names its channel in a join line: that is the channel, whatever the file is called.
    result = await _import(http, IRC_LOG, fileName="../../etc/ops-chat.log")
    assert result["format"] == "irc" and result["accepted"] == 3, result
    assert [c["name"] for c in result["channels"]] == ["ops"]
    assert [s["count"] for s in result["skipped"]] == [1], result
    # A log that names no channel is named after its file (no directories, no suffix).
    unnamed = b"\n".join(line for line in IRC_LOG.splitlines() if b"has joined" not in line)
    result = await _import(http, unnamed + b"\n", fileName="../../etc/ops-chat.log")
    assert [c["name"] for c in result["channels"]] == ["ops-chat"], result


async def test_a_log_of_times_only_is_dated_by_the_base_date_given(
    http: httpx.AsyncClient, db: asyncpg.Pool
) -> None:
    undated = await _import(http, IRC_LOG, fileName="ops.log", channelName="ops-undated")
    assert undated["repaired"] == 3, undated  # 1970-01-01 assumed, and said
    dated = await _import(
        http, IRC_LOG, fileName="ops.log", channelName="ops-dated", baseDate="2024-05-06"
    )
    assert dated["accepted"] == 3 and dated["repaired"] == 0, dated
    async with db.acquire() as connection:
        days = await connection.fetch(
            "SELECT DISTINCT m.ts::date AS day FROM messages m JOIN channels c ON c.id = "
            "m.channel_id WHERE c.name = 'ops-dated'"
        )
    assert [str(row["day"]) for row in days] == ["2024-05-06"]


async def test_unreadable_uploads_are_typed_errors_naming_the_upload(
    http: httpx.AsyncClient, db: asyncpg.Pool
) -> None:
    utf16 = await _import(http, IRC_LOG.decode().encode("utf-16"), fileName="ops.log")
    assert utf16["__typename"] == "InvalidInputError", utf16
    assert "UTF-16" in str(utf16["message"]) and "ops.log" in str(utf16["message"])
    assert "digestd-upload" not in str(utf16["message"]) and "/tmp" not in str(utf16["message"])

    html = await _import(http, b"<!doctype html><html><body>chat</body></html>", fileName="c.html")
    assert "is HTML" in str(html["message"]) and str(html["message"]).startswith("c.html"), html

    slack = await _import(http, b"[]", format="slack", fileName="day.json")
    assert slack == {
        "__typename": "InvalidInputError",
        "message": "day.json is not a zip: upload a Slack export's zip file",
        "code": "BAD_USER_INPUT",
    }
    not_slack = await _import(http, _zip({"a.txt": b"x"}), format="irc", fileName="a.zip")
    assert not_slack["message"] == "a.zip is a zip: only a Slack export is uploaded as a zip file"
    no_metadata = await _import(http, _zip({"general/2020-01-01.json": b"[]"}), fileName="a.zip")
    assert "a.zip is a zip without channels.json" in no_metadata["message"], no_metadata

    not_base64 = await gql(http, IMPORT, {"input": {"contentBase64": "%%%not base64"}}, WRITER)
    assert "not valid base64" in not_base64["importChatExport"]["message"], not_base64

    wrong = await _import(http, IRC_LOG, format="discord_csv", fileName="ops.log")
    assert wrong["accepted"] == 0 and wrong["formatDetected"] is False, wrong
    assert wrong["errors"][0]["location"] == "line 1"
    assert "Nothing imported: read as discord_csv (as format said)" in str(wrong["message"])
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM messages") == 0


def _zip(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
        for name, target in (links or {}).items():
            link = zipfile.ZipInfo(name)
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(link, target)
    return buffer.getvalue()


def _day(*texts: str) -> bytes:
    return json.dumps(
        [
            {"type": "message", "user": "U1", "text": text, "ts": f"1577923200.00000{n}"}
            for n, text in enumerate(texts, start=1)
        ]
    ).encode()


async def test_a_slack_zip_is_unpacked_safely_and_each_channel_keeps_its_name(
    http: httpx.AsyncClient, db: asyncpg.Pool
) -> None:
    temporary = Path(tempfile.gettempdir())
    uploads_before = set(temporary.glob("digestd-upload-*"))
    export = _zip(
        {
            "export/channels.json": json.dumps(
                [{"id": "C1", "name": "general"}, {"id": "C2", "name": "random"}]
            ).encode(),
            "export/users.json": json.dumps([{"id": "U1", "name": "ann"}]).encode(),
            "export/general/2020-01-02.json": _day("deploy today", "tell bob"),
            "export/random/2020-01-02.json": _day("lunch?"),
            "export/../../outside.json": b"[]",
        },
        links={"export/random/2020-01-03.json": "/etc/passwd"},
    )
    result = await _import(http, export, fileName="workspace.zip")
    assert result["format"] == "slack" and result["accepted"] == 3, result
    assert sorted(c["name"] for c in result["channels"]) == ["general", "random"]
    assert result["errors"] == [
        {
            "location": "zip member export/../../outside.json",
            "reason": "a path leading outside the export",
        },
        {"location": "zip member export/random/2020-01-03.json", "reason": "a symbolic link"},
    ]
    assert not (temporary / "outside.json").exists()
    assert set(temporary.glob("digestd-upload-*")) == uploads_before  # removed after the import
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM messages") == 3


async def test_a_reader_cannot_import(http: httpx.AsyncClient, db: asyncpg.Pool) -> None:
    refused = await post(http, IMPORT, {"input": export_input(IRC_LOG, fileName="a.log")}, READER)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN", refused
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM channels") == 0
