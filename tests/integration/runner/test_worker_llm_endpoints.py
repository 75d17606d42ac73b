"""Digest jobs against odd local endpoints, as `digestd serve`/`worker` runs them: a llama.cpp-style
server with an 8,192-token context behind a model digestd does not know ends the job SUCCEEDED (the
context is learned from its 400 and the chunks are cut again), with a LIMITS_DEFAULTED warning
naming the setting; an endpoint answering an HTML page is named with what came back (its chunks
read by the offline rules) instead of `AttributeError: 'str' object has no attribute 'usage'`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from starlette.responses import Response

from runner.llm.fake import FakeLLM, raw
from server.settings import Settings
from tests.support.database import Msg, add_channel
from tests.support.small_context import SmallContextModel, unique_model
from tests.support.worker import job_row, llm_settings, run_one_job


def busy_channel(count: int) -> list[Msg]:
    start = datetime(2024, 6, 3, 9, 0, tzinfo=UTC)
    return [
        Msg(
            str(5000 + i),
            f"dev{i % 5}",
            start + timedelta(minutes=i),
            f"build {i}: the integration suite for service {i % 7} timed out at stage {i % 4}; "
            f"raising the runner memory to {4 + i % 3} GB and pinning the base image fixed it",
        )
        for i in range(count)
    ]


async def test_a_small_context_local_server_ends_the_job_succeeded(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "ci-small-context", busy_channel(400))
    model = SmallContextModel("llama-cpp-python")
    name = unique_model("worker")
    async with FakeLLM(model).serve() as base_url:
        small_context = llm_settings(
            settings,
            base_url,
            digest_map_model=name,
            digest_reduce_model=name,
            digestd_chunk_tokens=6000,
            digest_llm_concurrency=4,
            digest_llm_max_retries=2,
        )
        job_id = await run_one_job(db, small_context, channel_id)
    job = await job_row(db, job_id)
    assert job.status == "succeeded", job.error
    assert job.attempts == 1 and job.stats["chunks_failed"] == 0
    assert model.refused, "the server was expected to refuse the first chunks"
    note = next(w["message"] for w in job.warnings if w["code"] == "LIMITS_DEFAULTED")
    assert "DIGEST_MAP_CONTEXT_TOKENS=" in note
    async with db.acquire() as connection:
        items = await connection.fetchval(
            "SELECT count(*) FROM knowledge_items WHERE digest_id = $1", job.digest_id
        )
    assert items > 0


async def test_an_html_endpoint_is_named_with_what_came_back(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "ci-html", busy_channel(20))

    def login_page(body: dict[str, Any]) -> Response:
        return raw("<!DOCTYPE html><html><title>Sign in</title><body>" + "x" * 5000, "text/html")

    async with FakeLLM(login_page).serve() as base_url:
        one_try = llm_settings(
            settings, base_url, digest_llm_max_retries=1, digest_llm_concurrency=1
        )
        job_id = await run_one_job(db, one_try, channel_id)
    job = await job_row(db, job_id)
    # The offline rules read the chunks; the warning says what the endpoint answered.
    assert job.status == "partial" and job.digest_id is not None, job.error
    [warning] = [w["message"] for w in job.warnings if w["code"] == "CHUNKS_EXTRACTED_OFFLINE"]
    assert "AttributeError" not in warning
    assert "malformed response" in warning and "text/html" in warning and "Sign in" in warning
    assert "x" * 200 not in warning
