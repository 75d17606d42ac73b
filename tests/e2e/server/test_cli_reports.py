"""`digestd report` as a user runs it (real processes, the test Postgres): a report across an
imported channel and an added document, printed as footnoted Markdown; `--json` gives the job
and the report with the API's ids; an unchanged re-run is served from the stored report."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

from runner.evaluation.fake_report_model import report_model
from runner.llm.fake import FakeLLM
from tests.support.paths import REPO_ROOT, SAMPLE
from tests.support.processes import digestd, environment

QUESTION = "Why did the nightly ingest job time out?"


def test_report_wait_prints_footnoted_markdown_and_a_rerun_is_served_from_the_cache(
    database_url: str, tmp_path: Path
) -> None:
    channel = f"cli-{uuid.uuid4().hex[:8]}"
    assert (
        digestd(database_url, tmp_path, "import", str(SAMPLE), "--channel", channel).returncode == 0
    )
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Ingest notes\n\nThe nightly ingest job times out when the upstream API is slow. "
        "Retries with backoff keep the job inside its window.\n",
        encoding="utf-8",
    )
    added = digestd(database_url, tmp_path, "add-doc", str(notes), "--json")
    assert added.returncode == 0, added.stderr
    document_id = json.loads(added.stdout)["document"]["id"]

    report_args = ("report", QUESTION, "--channel", channel, "--doc", document_id, "--wait")
    first = digestd(database_url, tmp_path, *report_args)
    assert first.returncode == 0, first.stderr
    markdown = first.stdout
    assert markdown.startswith("# Why did the nightly ingest job time out\n\n## Answer\n")
    numbers = re.findall(r"^\[\^(\d+)\]: ", markdown, re.M)
    assert numbers and numbers == [str(n) for n in range(1, len(numbers) + 1)]
    assert "(document " in markdown and f"#{channel}, " in markdown
    assert "written;" in first.stderr

    again = digestd(database_url, tmp_path, *report_args, "--json")
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["job"]["kind"] == "report" and result["job"]["stats"]["cache_hit"] is True
    assert result["job"]["reportId"] == result["report"]["id"]
    assert result["report"]["markdown"] + "\n" == markdown
    assert result["report"]["audit"]["coverage"] == 1.0

    missing = digestd(database_url, tmp_path, "report", QUESTION, "--channel", "nope", "--json")
    assert missing.returncode == 2 and json.loads(missing.stdout) == {"error": "no channel 'nope'"}
    nothing = digestd(database_url, tmp_path, "report", QUESTION)
    assert nothing.returncode == 2
    assert nothing.stderr.strip() == "digestd report: choose at least one channel or document"


async def test_report_with_an_llm_endpoint_is_written_by_the_model_and_says_its_fidelity(
    database_url: str, tmp_path: Path
) -> None:
    """The whole path as configured by a user: DIGEST_LLM_BASE_URL selects the LLM writer, the
    fake model (a real HTTP server) answers from the sources it is sent, `--json` shows the
    writer, the fidelity records, warnings and dropped ids; a re-run sends nothing."""
    channel = f"cli-{uuid.uuid4().hex[:8]}"
    imported = await asyncio.to_thread(
        digestd, database_url, tmp_path, "import", str(SAMPLE), "--channel", channel
    )
    assert imported.returncode == 0, imported.stderr

    fake = FakeLLM(report_model())
    async with fake.serve() as base_url:
        llm = {
            "DIGEST_EXTRACTOR": "llm",
            "DIGEST_LLM_BASE_URL": base_url,
            "DIGEST_REDUCE_MODEL": "fake-report-model",
        }
        args = ("report", QUESTION, "--channel", channel, "--wait", "--json")
        first = await asyncio.to_thread(run_digestd, database_url, tmp_path, llm, *args)
        assert first.returncode == 0, first.stderr
        result = json.loads(first.stdout)
        report = result["report"]
        assert (
            len(fake.requests) == 1
            and fake.requests[0]["tool_choice"]["function"]["name"] == "emit_report"
        )
        assert report["writer"] == "llm:fake-report-model:report-1:60"
        assert report["fidelity"][0]["phase"] == "synthesis"
        # The fake model is in no table: its context is assumed, and the report says so.
        assert [w["code"] for w in report["warnings"]] == ["LIMITS_DEFAULTED"]
        assert "DIGEST_REDUCE_CONTEXT_TOKENS" in report["warnings"][0]["message"]
        assert report["dropped_content_ids"] == []
        assert report["audit"]["coverage"] == 1.0 and report["audit"]["re_asked"] == 0
        again = await asyncio.to_thread(run_digestd, database_url, tmp_path, llm, *args)
        assert json.loads(again.stdout)["job"]["stats"]["cache_hit"] is True
        assert len(fake.requests) == 1, "a cache hit must not call the model"


def run_digestd(
    database_url: str, home: Path, extra: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**environment(database_url, home), **extra},
        timeout=120,
    )
