"""An archive directory that cannot be written is found when the worker starts: one log line,
document jobs run with archiving off and say so in one warning each, and succeed; a writable
directory is archived into as before. Real worker, real PostgreSQL, real files."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import asyncpg
import pytest

from db import jobs
from db.documents import store_document
from db.models import DigestJob
from runner.documents.ingest import ingest_text
from runner.triggers import trigger_document_digest
from server.runtime import Runtime, digest_config
from server.settings import Settings
from tests.support.documents import DOCUMENT_TEXT


async def _digest_twice(settings: Settings, db: asyncpg.Pool) -> list[DigestJob]:
    runtime = Runtime(settings.model_copy(update={"digestd_doc_digest_policy": "always"}))
    await runtime.open()
    try:
        worker = runtime.new_worker()
        done = []
        for number in range(2):
            async with db.acquire() as connection:
                text = f"{DOCUMENT_TEXT}\n\nEdition {number}."
                row, _ = await store_document(connection, ingest_text(text).as_record())
                job, _ = await trigger_document_digest(
                    connection,
                    row.id,
                    "How is caching reviewed?",
                    config=digest_config(runtime.settings),
                    max_attempts=3,
                )
            assert await worker.run_once()
            runtime.new_worker()  # another worker of the same process: no second probe
            async with db.acquire() as connection:
                finished = await jobs.job_by_id(connection, job.id)
            assert finished is not None
            done.append(finished)
        return done
    finally:
        await runtime.close()


async def test_an_unwritable_archive_dir_is_one_log_line_and_one_warning_per_job(
    db: asyncpg.Pool, settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the archive directory should be")
    # Below a regular file: not writable whoever runs the test (root ignores permissions).
    configured = settings.model_copy(update={"digestd_archive_dir": blocker / "archive"})
    with caplog.at_level(logging.WARNING, logger="server.runtime"):
        done = await _digest_twice(configured, db)
    probes = [r for r in caplog.records if r.getMessage().startswith("archive disabled")]
    assert len(probes) == 1, caplog.records
    assert "DIGESTD_ARCHIVE_DIR is not writable (NotADirectoryError" in probes[0].getMessage()
    for job in done:
        assert job.status == "succeeded", job
        assert [w["code"] for w in job.warnings] == ["archive_disabled"]
        message = job.warnings[0]["message"]
        assert message.startswith("archiving is off: DIGESTD_ARCHIVE_DIR is not writable")
        assert "archived" not in job.stats
    assert "archive_failed" not in caplog.text


async def test_a_writable_archive_dir_is_archived_into(
    db: asyncpg.Pool, settings: Settings, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    done = await _digest_twice(settings.model_copy(update={"digestd_archive_dir": archive}), db)
    for job in done:
        assert job.status == "succeeded" and job.warnings == [], job
        assert job.stats["archived"] is True
    assert [path for path in archive.rglob("*") if path.is_file()]
    assert not list(archive.glob(".digestd-probe-*"))


async def test_a_write_that_fails_after_the_probe_is_archive_write_failed_and_the_job_succeeds(
    db: asyncpg.Pool, settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive = tmp_path / "archive"
    configured = settings.model_copy(
        update={"digestd_archive_dir": archive, "digestd_doc_digest_policy": "always"}
    )
    runtime = Runtime(configured)
    await runtime.open()
    try:
        worker = runtime.new_worker()  # the probe finds the directory writable
        # The disk goes away under the worker: a file now stands where the directory was.
        shutil.rmtree(archive)
        archive.write_text("a file where the archive directory should be")
        async with db.acquire() as connection:
            row, _ = await store_document(connection, ingest_text(DOCUMENT_TEXT).as_record())
            job, _ = await trigger_document_digest(
                connection,
                row.id,
                "How is caching reviewed?",
                config=digest_config(runtime.settings),
                max_attempts=3,
            )
        with caplog.at_level(logging.WARNING, logger="runner.documents.job"):
            assert await worker.run_once()
        async with db.acquire() as connection:
            finished = await jobs.job_by_id(connection, job.id)
    finally:
        await runtime.close()
    assert finished is not None and finished.status == "succeeded", finished
    assert [w["code"] for w in finished.warnings] == ["ARCHIVE_WRITE_FAILED"]
    assert "while archiving" in finished.warnings[0]["message"]
    assert "archived" not in finished.stats
