"""`digestd digest --wait` and `digestd add-doc --query --wait` with the model's endpoint down, as
a user meets it: the job ends PARTIAL with a digest read offline, the CLI says why in both of its
outputs, and the API key appears in neither."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

from tests.support.paths import REPO_ROOT, SAMPLE, shared_data
from tests.support.processes import digestd, environment

SECRET = "sk-test-never-shown-4242"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _digest_with_model_down(
    database_url: str, home: Path, channel: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return _with_model_down(database_url, home, "digest", channel, "--wait", *args)


def _with_model_down(database_url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = environment(database_url, home)
    del env["DIGEST_EXTRACTOR"]  # a base URL selects the LLM extractor
    env.update(
        DIGEST_LLM_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1",
        DIGEST_LLM_API_KEY=SECRET,
        DIGEST_LLM_MAX_RETRIES="0",
    )
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_model_that_is_down_still_gives_a_digest_and_says_why(
    database_url: str, tmp_path: Path
) -> None:
    channel = f"down-{uuid.uuid4().hex[:8]}"
    imported = digestd(database_url, tmp_path, "import", str(SAMPLE), "--channel", channel)
    assert imported.returncode == 0, imported.stderr

    as_json = _digest_with_model_down(database_url, tmp_path, channel, "--json")
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    job = json.loads(as_json.stdout)["job"]
    assert job["status"] == "PARTIAL" and job["digestId"] is not None
    assert job["stats"]["extractor"] == "llm" and job["stats"]["chunks_offline"] >= 1
    codes = [warning["code"] for warning in job["warnings"]]
    assert "CHUNKS_EXTRACTED_OFFLINE" in codes

    # A second channel, read as text: the digest on stdout, the reason on stderr.
    other = f"down-{uuid.uuid4().hex[:8]}"
    assert (
        digestd(database_url, tmp_path, "import", str(SAMPLE), "--channel", other).returncode == 0
    )
    as_text = _digest_with_model_down(database_url, tmp_path, other)
    assert as_text.returncode == 0, as_text.stderr[-2000:]
    assert as_text.stdout.startswith("# ") and ": 70 messages" in as_text.stdout
    assert "warning CHUNKS_EXTRACTED_OFFLINE: " in as_text.stderr
    for output in (as_json.stdout, as_json.stderr, as_text.stdout, as_text.stderr):
        assert SECRET not in output


def test_a_document_digest_with_the_model_down_is_the_offline_one_and_says_why(
    database_url: str, tmp_path: Path
) -> None:
    page = shared_data("docs/html/readability/wikipedia/source.html")
    query = f"Which products does Mozilla make? ({uuid.uuid4().hex[:8]})"
    done = _with_model_down(
        database_url, tmp_path, "add-doc", str(page), "--query", query, "--wait"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    stored, printed = done.stdout.split("\n", 1)  # the document's line, then its Markdown
    assert stored.startswith("document ")
    assert " · offline · " in printed.splitlines()[1]  # the summarizer that wrote it
    assert "\n## Key points\n- " in printed and "\n## Evidence\n- " in printed
    assert " partial: digest " in done.stderr
    assert (
        "warning SUMMARY_EXTRACTED_OFFLINE: the summary and key points were extracted by the "
        "offline rules; the model failed: LLM request failed: connection error"
    ) in done.stderr
    assert SECRET not in done.stdout + done.stderr
