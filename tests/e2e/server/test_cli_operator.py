"""The CLI as scripts and operators meet it: `--version`, the schema as SDL (and the checked-in
docs/schema.graphql that must follow it), and configuration, database and port problems as one
line on stderr with exit status 2 instead of a traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from schema import build_schema
from tests.support.paths import REPO_ROOT, SAMPLE
from tests.support.processes import environment


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_version(tmp_path: Path) -> None:
    result = run(environment("postgresql://unused", tmp_path), "--version")
    assert result.returncode == 0 and result.stdout.startswith("digestd ")


def test_docs_schema_graphql_is_the_schema() -> None:
    """Regenerate with `digestd schema > docs/schema.graphql` when the API changes; a diff of
    that file is the API change a reviewer and client authors read."""
    checked_in = (REPO_ROOT / "docs" / "schema.graphql").read_text("utf-8")
    assert checked_in == build_schema().as_str() + "\n"


def test_schema_command_prints_the_sdl(tmp_path: Path) -> None:
    result = run(environment("postgresql://unused", tmp_path), "schema")
    assert result.returncode == 0
    assert "type Query {" in result.stdout and "triggerDigest" in result.stdout


def test_a_bad_setting_is_one_line_naming_it_not_its_value(tmp_path: Path) -> None:
    env = environment("postgresql://unused", tmp_path)
    env["DIGESTD_LEASE_SECONDS"] = "-7.5"
    line = one_line_error(run(env, "migrate"))
    assert "DIGESTD_LEASE_SECONDS" in line and "-7.5" not in line


def test_an_unreachable_database_is_one_line_with_the_password_redacted(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        env = environment(f"postgresql://ann:s3cret-pw@127.0.0.1:{port}/x", tmp_path)
        line = one_line_error(run(env, "digest", "general"))
    assert "s3cret-pw" not in line and f"127.0.0.1:{port}" in line and "refused" in line.lower()


def test_a_malformed_database_url_is_one_line(tmp_path: Path) -> None:
    line = one_line_error(run(environment("not a url?password=hunter2", tmp_path), "migrate"))
    assert "hunter2" not in line and "database" in line


def test_serve_on_a_busy_port_says_so_before_announcing_a_url(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run(environment("postgresql://unused", tmp_path), "serve", "--port", str(port))
    line = one_line_error(result)
    assert "in use" in line and "GraphiQL" not in result.stderr


def test_a_worker_serves_its_metrics_and_stops_cleanly(database_url: str, tmp_path: Path) -> None:
    import signal
    import time
    import urllib.request

    from tests.support.servers import free_port

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "worker", "--metrics-port", str(port)],
        cwd=REPO_ROOT,
        env=environment(database_url, tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        body = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not body:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/metrics", timeout=2
                ) as answer:
                    body = answer.read().decode()
            except OSError:
                time.sleep(0.2)
        assert "# TYPE digestd_job_duration_seconds histogram" in body
        assert "# TYPE digestd_llm_calls_total counter" in body
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr


def one_object(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    value: dict[str, Any] = json.loads(lines[0])
    return value


def test_json_output_of_import_digest_and_add_doc(database_url: str, tmp_path: Path) -> None:
    env = environment(database_url, tmp_path)
    channel = f"json-{uuid.uuid4().hex[:8]}"
    imported = run(
        env, "import", str(SAMPLE), "--channel", channel, "--server", "json-test", "--json"
    )
    assert imported.returncode == 0, imported.stderr
    report = one_object(imported)
    assert report["accepted"] == report["inserted"] > 0 and report["rejected"] == 0
    assert [c["name"] for c in report["channels"]] == [channel]
    channel_id = report["channels"][0]["id"]

    queued = one_object(run(env, "digest", channel_id, "--json"))
    assert queued["created"] is True and queued["job"]["status"] == "QUEUED"
    waited = run(env, "digest", channel_id, "--wait", "--json")
    assert waited.returncode == 0, waited.stderr
    job = one_object(waited)["job"]
    assert job["id"] == queued["job"]["id"] and job["status"] == "SUCCEEDED" and job["digestId"]
    assert job["stats"]["messages"] == report["accepted"]

    missing = run(env, "digest", "no-such-channel-anywhere", "--json")
    assert missing.returncode == 2 and "no channel" in one_object(missing)["error"]

    text = tmp_path / "notes.txt"
    text.write_text("Release notes. " * 50 + "The deploy moved to Friday because of the freeze.\n")
    added = run(env, "add-doc", str(text), "--json")
    assert added.returncode == 0, added.stderr
    document = one_object(added)["document"]
    assert (
        document["created"] is True
        and document["chars"] > 700
        and document["sourceTextHash"].startswith("sha256:")
    )


def test_json_output_of_an_unusable_input_is_an_error_object(
    database_url: str, tmp_path: Path
) -> None:
    folder_as_file = tmp_path / "not-an-export"
    folder_as_file.mkdir()
    result = run(environment(database_url, tmp_path), "import", str(folder_as_file), "--json")
    assert result.returncode == 2
    assert one_object(result)["error"]


def test_serve_with_an_unreachable_database_is_one_line_before_announcing_a_url(
    tmp_path: Path,
) -> None:
    from tests.support.servers import free_port

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        db_port = closed.getsockname()[1]  # bound, never listening: connections are refused
        env = environment(f"postgresql://ann:s3cret-pw@127.0.0.1:{db_port}/x", tmp_path)
        result = run(env, "serve", "--port", str(free_port()))
    line = one_line_error(result)
    assert "s3cret-pw" not in line and "refused" in line.lower() and "GraphiQL" not in result.stderr


def test_a_short_api_token_is_one_line_naming_the_entry_not_the_token(
    database_url: str, tmp_path: Path
) -> None:
    from tests.support.servers import free_port

    env = environment(database_url, tmp_path)  # a database that answers: serve gets that far
    env["DIGESTD_API_TOKENS"] = "reader:long-enough-1,writer:shrt"
    result = run(env, "serve", "--port", str(free_port()))
    line = one_line_error(result)
    assert "DIGESTD_API_TOKENS" in line and "entry 2" in line and "under 8" in line
    assert "shrt" not in line and "long-enough-1" not in line and "GraphiQL" not in result.stderr
