"""`digestd report` as a user runs it (real processes, the test Postgres): a report across an
imported channel and an added document, printed as footnoted Markdown; `--json` gives the job
and the report with the API's ids; an unchanged re-run is served from the stored report."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from tests.test_cli import SAMPLE, digestd

QUESTION = "Why did the nightly ingest job time out?"


def test_report_wait_prints_footnoted_markdown_and_a_rerun_is_served_from_the_cache(
    database_url: str, tmp_path: Path
) -> None:
    channel = f"cli-{uuid.uuid4().hex[:8]}"
    assert digestd(database_url, tmp_path, "import", str(SAMPLE), "--channel", channel).returncode == 0
    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Ingest notes\n\nThe nightly ingest job times out when the upstream API is slow. "
        "Retries with backoff keep the job inside its window.\n",
        encoding="utf-8",
    )
    added = digestd(database_url, tmp_path, "add-doc", str(notes), "--json")
    assert added.returncode == 0, added.stderr
    document_id = json.loads(added.stdout)["document"]["id"]

    first = digestd(database_url, tmp_path, "report", QUESTION, "--channel", channel,
                    "--doc", document_id, "--wait")  # fmt: skip
    assert first.returncode == 0, first.stderr
    markdown = first.stdout
    assert markdown.startswith("# Why did the nightly ingest job time out\n\n## Answer\n")
    numbers = re.findall(r"^\[\^(\d+)\]: ", markdown, re.M)
    assert numbers and numbers == [str(n) for n in range(1, len(numbers) + 1)]
    assert "(document " in markdown and f"#{channel}, " in markdown
    assert "written;" in first.stderr

    again = digestd(database_url, tmp_path, "report", QUESTION, "--channel", channel,
                    "--doc", document_id, "--wait", "--json")  # fmt: skip
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
