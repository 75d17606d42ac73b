"""A model that fails still gives a digest, as `digestd serve`/`worker` runs a channel job (real
`openai` client, the fake endpoint on a loopback port): a model answering garbage, an endpoint on a
closed port, each end the job PARTIAL with a grounded digest the offline rules filled in and a
warning naming the chunks and why; a llama.cpp-like server that cannot build a grammar from a
schema with length and count bounds ends the job SUCCEEDED, its calls sent again without them."""

from __future__ import annotations

import json
import re
import socket
from typing import Any

import asyncpg
import pytest
from starlette.responses import Response

from runner.grounding.claim_support import support_share
from runner.llm.bounds import BOUND_KEYWORDS
from runner.llm.fake import FakeLLM, completion, error, tool_of
from server.settings import Settings
from tests.support.database import add_channel
from tests.support.llm import API_KEY, scripted
from tests.support.worker import (
    assert_pointers_resolve,
    job_row,
    llm_settings,
    run_one_job,
    sample_messages,
)

# What the garbage model writes: it must never reach a warning, a flag or a job error.
GARBAGE = "GARBAGE-7f3a-the-model-wrote-this"


def garbage(body: dict[str, Any]) -> dict[str, Any]:
    """Unusable answers: arguments that are not JSON for the map requests of even chunks and
    the reduce, no tool call at all for odd chunks."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    odd = re.search(r'<chunk index="\d*[13579]"', user) is not None
    if tool_of(body) == "emit_chunk_summary" and odd:
        return completion(content=f"Sure! {GARBAGE}")
    return completion(tool=tool_of(body), arguments=f"{{{GARBAGE} not json")


async def assert_grounded_partial_digest(db: asyncpg.Pool, job_id: int) -> dict[str, Any]:
    """The job ended PARTIAL with a stored digest whose claims cite the channel's messages and
    are supported by them, whose pointers resolve, and whose every chunk was named as read by
    the offline rules; returns the CHUNKS_EXTRACTED_OFFLINE warning."""
    job = await job_row(db, job_id)
    assert job.status == "partial", job.error
    assert job.digest_id is not None and job.attempts == 1
    assert job.stats["chunks_failed"] == 0
    assert job.stats["chunks_offline"] == job.stats["chunks"] >= 3
    assert await assert_pointers_resolve(db, job.digest_id) >= 1
    async with db.acquire() as connection:
        texts = {
            row["external_id"]: row["normalized_text"]
            for row in await connection.fetch(
                "SELECT external_id, normalized_text FROM messages WHERE channel_id = "
                "(SELECT channel_id FROM digests WHERE id = $1)",
                job.digest_id,
            )
        }
        claims = await connection.fetch(
            "SELECT text, message_ids FROM decisions WHERE digest_id = $1 UNION ALL "
            "SELECT text, message_ids FROM action_items WHERE digest_id = $1 UNION ALL "
            "SELECT text, message_ids FROM open_questions WHERE digest_id = $1",
            job.digest_id,
        )
        flags = json.loads(
            await connection.fetchval(
                "SELECT flags::text FROM digests WHERE id = $1", job.digest_id
            )
        )
        uncovered = await connection.fetchval(
            "SELECT count(*) FROM messages WHERE channel_id = "
            "(SELECT channel_id FROM digests WHERE id = $1) AND covered_revision IS NULL",
            job.digest_id,
        )
    assert claims, "the offline rules found nothing in the sample"
    for claim in claims:
        assert claim["message_ids"] and set(claim["message_ids"]) <= set(texts)
        share = support_share(claim["text"], [texts[m] for m in claim["message_ids"]])
        assert share is None or share >= 0.5, claim
    offline_flags = [f for f in flags if f["code"] == "chunk_offline"]
    assert len(offline_flags) == job.stats["chunks"]
    assert uncovered == 0  # read by the offline rules: digested, not left for later
    [warning] = [w for w in job.warnings if w["code"] == "CHUNKS_EXTRACTED_OFFLINE"]
    everything = json.dumps([job.warnings, flags, job.error], default=str)
    assert API_KEY not in everything
    return dict(warning)


async def test_a_model_answering_garbage_gives_a_partial_grounded_digest(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    fake = FakeLLM(garbage)
    async with fake.serve() as base_url:
        job_id = await run_one_job(db, llm_settings(settings, base_url), channel_id)
    warning = await assert_grounded_partial_digest(db, job_id)
    chunks = (await job_row(db, job_id)).stats["chunks"]
    said = warning["message"]
    assert said.startswith(f"{chunks} chunks extracted by the offline rules (0-{chunks - 1}); ")
    assert "unusable emit_chunk_summary output: the arguments are not valid JSON" in said
    assert "unusable emit_chunk_summary output: no tool call" in said
    async with db.acquire() as connection:
        stored = await connection.fetchval(
            "SELECT row_to_json(d)::text FROM digests d WHERE id = "
            "(SELECT digest_id FROM digest_jobs WHERE id = $1)",
            job_id,
        )
    job = await job_row(db, job_id)
    assert GARBAGE not in json.dumps([job.warnings, job.error], default=str)
    assert GARBAGE not in stored
    # Each chunk was asked twice (the re-ask), and the reduce was tried before the offline merge.
    tools = fake.tools_called()
    assert tools.count("emit_chunk_summary") == 2 * chunks and "emit_digest" in tools


async def test_an_endpoint_on_a_closed_port_gives_a_partial_digest(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    job_id = await run_one_job(
        db, llm_settings(settings, f"http://127.0.0.1:{port}/v1"), channel_id
    )
    warning = await assert_grounded_partial_digest(db, job_id)
    assert "connection error" in warning["message"]


def grammar_server(status: int, message: str, refused: list[dict[str, Any]]) -> Any:
    """A llama.cpp-like server: a request whose tool schema has a length or count bound is
    refused with `message` (the grammar it makes fails to parse), any other is answered by the
    scripted model."""
    model = scripted()

    def respond(body: dict[str, Any]) -> dict[str, Any] | Response:
        schema = json.dumps(body["tools"][0]["function"]["parameters"])
        if any(f'"{keyword}":' in schema for keyword in BOUND_KEYWORDS):
            refused.append(body)
            return error(status, message)
        answer: dict[str, Any] = model(body)
        return answer

    return respond


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Failed to parse grammar"),  # llama.cpp's server
        (500, "failed to parse grammar"),  # a server passing the library's error on
    ],
)
async def test_a_server_that_cannot_build_the_grammar_gets_the_schema_without_bounds(
    db: asyncpg.Pool, settings: Settings, status: int, message: str
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    refused: list[dict[str, Any]] = []
    fake = FakeLLM(grammar_server(status, message, refused))
    async with fake.serve() as base_url:
        # One request at a time, so the first refusal is known before any other is sent.
        one_at_a_time = llm_settings(settings, base_url, digest_llm_concurrency=1)
        job_id = await run_one_job(db, one_at_a_time, channel_id)
        first_requests = len(fake.requests)
        # Another job of the process shares the client: it sends no bounds from the start.
        other = await add_channel(db, "team-infra", sample_messages())
        other_id = await run_one_job(db, one_at_a_time, other)
    other_job = await job_row(db, other_id)
    assert other_job.status == "succeeded", (other_job.error, other_job.warnings)
    assert len(refused) == 1 and len(fake.requests) > first_requests
    assert any(w["code"] == "SCHEMA_BOUNDS_OMITTED" for w in other_job.warnings)
    job = await job_row(db, job_id)
    assert job.status == "succeeded", (job.error, job.warnings)
    assert job.stats["chunks_offline"] == 0 and job.stats["chunks_failed"] == 0
    # Refused once (neither retried nor counted as the endpoint's failure), then remembered:
    # every later request of the job, the reduce's included, went without bounds.
    assert len(refused) == 1
    answered = [e for e in fake.exchanges if e.status == 200]
    assert len(answered) == len(fake.exchanges) - 1
    # (several chunks a map request: DIGESTD_CHUNKS_PER_REQUEST)
    assert {tool_of(e.body) for e in answered} == {"emit_chunk_summaries", "emit_digest"}
    assert any(w["code"] == "SCHEMA_BOUNDS_OMITTED" for w in job.warnings)
    assert await assert_pointers_resolve(db, job.digest_id) >= 1


async def test_bounds_set_to_omit_are_never_sent(db: asyncpg.Pool, settings: Settings) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    refused: list[dict[str, Any]] = []
    fake = FakeLLM(grammar_server(400, "Failed to parse grammar", refused))
    async with fake.serve() as base_url:
        omit = llm_settings(settings, base_url, digest_llm_schema_bounds="omit")
        job_id = await run_one_job(db, omit, channel_id)
    job = await job_row(db, job_id)
    assert job.status == "succeeded", (job.error, job.warnings)
    assert refused == [] and fake.requests
    assert not any(w["code"] == "SCHEMA_BOUNDS_OMITTED" for w in job.warnings)


async def test_bounds_set_to_send_fail_over_to_the_offline_rules(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    refused: list[dict[str, Any]] = []
    fake = FakeLLM(grammar_server(400, "Failed to parse grammar", refused))
    async with fake.serve() as base_url:
        send = llm_settings(settings, base_url, digest_llm_schema_bounds="send")
        job_id = await run_one_job(db, send, channel_id)
    warning = await assert_grounded_partial_digest(db, job_id)
    assert "Failed to parse grammar" in warning["message"]
    assert len(refused) == len(fake.requests)  # every request carried the bounds
