"""The CLI as scripts and operators meet it: `--version`, the schema as SDL (and the checked-in
docs/schema.graphql that must follow it), and configuration, database and port problems as one
line on stderr with exit status 2 instead of a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from schema import build_schema
from tests.test_cli import REPO, environment


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args], cwd=REPO, capture_output=True, text=True,
        env=env, timeout=60,
    )  # fmt: skip


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
    checked_in = (REPO / "docs" / "schema.graphql").read_text("utf-8")
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
