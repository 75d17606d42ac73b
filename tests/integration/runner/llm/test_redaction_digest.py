"""Redaction seen end to end. A channel digest of real IRC messages (the Ubuntu disentanglement corpus, whose join lines carry
people's `user@host` addresses), plus two messages with fake tokens and an e-mail address, run by a
worker through the LLM extractor against the fake endpoint: with DIGESTD_REDACT=always the model
receives none of the addresses or tokens, its quotes of the placeholders come back as the real
text, and the stored pointers quote the real messages verbatim; with `never` the model sees them. A report
job's writer (whose endpoint is not on loopback, so `auto` redacts) is not sent them either, and
its report copies the real message, audited against it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from prometheus_client import REGISTRY

from db import jobs
from db import reports as report_queries
from runner.evaluation.fake_report_model import fake_report_writer
from runner.extract.offline import OfflineExtractor
from runner.llm.fake import FakeLLM
from runner.reports.job import ReportJobRunner
from runner.triggers import trigger_report
from runner.worker import Worker, WorkerConfig
from server.settings import Settings
from tests.support.database import Msg, add_channel, messages
from tests.support.llm import chunk_messages_of, grounded_summary, scripted, shared_data
from tests.support.reports import OPS, QUESTION, assert_audited, stored_report
from tests.support.worker import assert_pointers_resolve, job_row, llm_settings, run_one_job

IRC_LOG = "chat/ubuntu_irc_disentanglement/dev/2004-11-15_03.raw.txt"
# Fake credentials, shaped like GitHub's and Slack's, added to a copy of the real log.
GITHUB_TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
SLACK_TOKEN = "xoxb-1029384756-" + "q1W2e3R4t5Y6u7I8o9P0"
ADDED = [
    ("deployer", f"the CI token is {GITHUB_TOKEN}, rotate it and tell release-bot@example.org"),
    ("ops", f"slack alerts use {SLACK_TOKEN}; page oncall.lead@example.org if it fails"),
]
# An address as anyone would spot one, independent of the detector under test.
_ADDRESS = re.compile(r"[\w.+~-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
_IRC_LINE = re.compile(r"^\[\d\d:\d\d\] <([^>]+)> ?(.*)$")


def irc_messages(limit: int) -> list[Msg]:
    """The log's first `limit` lines as messages (join and part lines by `irc`), then ADDED."""
    start = datetime(2004, 11, 15, 3, 0, tzinfo=UTC)
    lines = [line for line in shared_data(IRC_LOG).read_text("utf-8").splitlines() if line]
    pairs: list[tuple[str, str]] = []
    for line in lines[:limit]:
        match = _IRC_LINE.match(line)
        pairs.append((match[1], match[2]) if match else ("irc", line))
    pairs[len(pairs) // 2 : len(pairs) // 2] = ADDED
    return [
        Msg(f"irc{i}", author, start + timedelta(seconds=20 * i), text)
        for i, (author, text) in enumerate(pairs)
        if text.strip()
    ]


def quoting_model() -> Any:
    """The scripted model, whose map also quotes every message it was shown with a placeholder
    in it, whole, as a knowledge item: the pointer the validator must find in the real text."""

    def map_arguments(body: dict[str, Any]) -> dict[str, Any]:
        summary = grounded_summary(body)
        shown = [m for m in chunk_messages_of(body) if "«" in m.text]
        summary["knowledge_items"] += [
            {
                "key": f"R{index}",
                "kind": "fact",
                "title": "quoted",
                "content_pointer": {
                    "message_id": message.message_id,
                    "char_start": message.offset,
                    "char_end": message.offset + len(message.text),
                    "quote": message.text,
                },
                "message_ids": [message.message_id],
            }
            for index, message in enumerate(shown[:4])
        ]
        return summary

    return scripted(map_arguments=map_arguments)


def secrets_of(items: list[Msg]) -> set[str]:
    found = {address for item in items for address in _ADDRESS.findall(item.text)}
    return found | {GITHUB_TOKEN, SLACK_TOKEN}


def sent_text(endpoint: FakeLLM) -> list[str]:
    return [json.dumps(body, ensure_ascii=False) for body in endpoint.requests]


async def stored_quotes(pool: asyncpg.Pool, digest_id: int | None) -> list[str]:
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT quote FROM knowledge_items WHERE digest_id = $1 AND quote IS NOT NULL",
            digest_id,
        )
    return [str(row["quote"]) for row in rows]


def redacted_total(kind: str) -> float:
    return REGISTRY.get_sample_value("digestd_redactions_total", {"kind": kind}) or 0.0


async def test_the_model_never_sees_an_address_or_token_and_quotes_stay_real(
    db: asyncpg.Pool, settings: Settings
) -> None:
    items = irc_messages(160)
    secrets = secrets_of(items)
    assert len(secrets) >= 6, "the log was expected to carry several user@host addresses"
    channel_id = await add_channel(db, "ubuntu-redacted", items)
    endpoint = FakeLLM(quoting_model())
    emails_before = redacted_total("email")
    async with endpoint.serve() as base_url:  # on loopback: `auto` would not redact
        job_id = await run_one_job(
            db, llm_settings(settings, base_url, digestd_redact="always"), channel_id
        )
    job = await job_row(db, job_id)
    assert job.status == "succeeded", job.error

    sent = sent_text(endpoint)
    assert len(sent) >= 3 and any("«EMAIL_" in text for text in sent)
    leaked = sorted(secret for secret in secrets if any(secret in text for text in sent))
    assert leaked == [], f"the model was sent {len(leaked)} of the secrets"

    counts = job.stats["redactions"]
    assert counts["email"] >= len(secrets) - 2 and counts["token"] >= 2
    assert redacted_total("email") - emails_before == counts["email"]

    # Every pointer slices its real message to its quote, and the quotes carry the real values.
    assert await assert_pointers_resolve(db, job.digest_id) > 0
    quotes = "\n".join(await stored_quotes(db, job.digest_id))
    assert GITHUB_TOKEN in quotes and "release-bot@example.org" in quotes
    assert "«" not in quotes


async def test_with_never_the_model_sees_the_data(db: asyncpg.Pool, settings: Settings) -> None:
    items = irc_messages(60)
    channel_id = await add_channel(db, "ubuntu-unredacted", items)
    endpoint = FakeLLM(quoting_model())
    async with endpoint.serve() as base_url:
        job_id = await run_one_job(
            db, llm_settings(settings, base_url, digestd_redact="never"), channel_id
        )
    job = await job_row(db, job_id)
    assert job.status == "succeeded", job.error
    sent = "\n".join(sent_text(endpoint))
    assert GITHUB_TOKEN in sent and "release-bot@example.org" in sent and "«" not in sent
    assert "redactions" not in job.stats


async def test_a_report_writer_never_sees_an_address_or_token(
    db: asyncpg.Pool, database_url: str
) -> None:
    private = (
        "Database migration rollbacks are approved by the on-call lead at "
        f"oncall.lead@example.org, and the approval bot signs them with {GITHUB_TOKEN}."
    )
    channel_id = await add_channel(db, "ops-private", messages([*OPS, ("fay", private)]))
    writer, model = fake_report_writer()  # its endpoint is not on loopback: `auto` redacts
    runner = ReportJobRunner(llm_writer=writer)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, reports=runner)
    async with db.acquire() as connection:
        job, _ = await trigger_report(
            connection, QUESTION, max_attempts=3, channel_ids=[channel_id], document_ids=[]
        )
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.report_id is not None, done
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
        report = await stored_report(connection, row)
    assert done.status == "succeeded", done.error
    sent = sent_text(model)
    assert len(sent) == 1 and "«EMAIL_1»" in sent[0] and "«TOKEN_1»" in sent[0]
    assert "oncall.lead@example.org" not in sent[0] and GITHUB_TOKEN not in sent[0]
    assert done.stats["redactions"] == {"email": 1, "token": 1}
    assert private in row.markdown  # the model's copy of the message, restored to the real text
    assert_audited(report, row.markdown)
