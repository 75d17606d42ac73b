"""`digestd catchup` as a user runs it: a real IRC log imported and digested with the CLI, then
the catch-up of a nick nobody stored (their name is their handle) as cited Markdown and as
--json, --since as a duration or a time, --channel, a refused --since, and --mark-read moving
where the next catch-up starts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.support.cli import CliResult, run_cli
from tests.support.paths import shared_data

LOG = "chat/ubuntu_irc/2010-08-17_18.raw.txt"


def _ok(result: CliResult) -> str:
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _json(result: CliResult) -> dict[str, Any]:
    out = _ok(result)
    assert out.endswith("}\n") and out.count("\n") == 1, out[-300:]
    value: dict[str, Any] = json.loads(out)
    return value


def test_catchup_prints_cited_markdown_and_json_and_marks_read(
    database_url: str, tmp_path: Path
) -> None:
    def run(*args: str) -> CliResult:
        return run_cli(database_url, tmp_path, *args)

    _ok(run("import", str(shared_data(LOG)), "--channel", "ubuntu"))
    _ok(run("digest", "ubuntu", "--wait"))

    markdown = _ok(run("catchup", "Seveas-train", "--since", "2010-08-17T00:00:00Z"))
    assert markdown.startswith("# Catch-up for Seveas-train\n")
    assert "## ubuntu" in markdown and "### Questions put to you" in markdown
    # yanick_'s question put to Seveas-train, footnoted with its verbatim words.
    question = re.search(r"^- (.*)\(asked by yanick\\_\)\[\^(\d+)\]$", markdown, re.MULTILINE)
    assert question, markdown[:2000]
    footnote = re.search(
        rf"^\[\^{question[2]}\]: yanick\\_, 2010-08-17 \d\d:\d\d UTC, \"Seveas-train,",
        markdown,
        re.MULTILINE,
    )
    assert footnote, markdown[-2000:]

    data = _json(
        run("catchup", "seveas-train", "--since", "2010-08-17", "--channel", "ubuntu", "--json")
    )
    assert data["known"] is False and data["handles"] == ["seveas-train"]
    (section,) = data["channels"]
    assert section["channelName"] == "ubuntu" and section["counts"]["questions"] >= 1
    assert section["counts"]["total"] == len(section["entries"])
    assert all(entry["citations"] for entry in section["entries"])
    assert data["markedRead"] == []

    # A duration reaches back from now: these 2010 messages are older than two days, so only
    # what still waits (the open question) is left.
    recent = _json(run("catchup", "Seveas-train", "--since", "2d", "--json"))
    kinds = {e["kind"] for s in recent["channels"] for e in s["entries"]}
    assert kinds == {"QUESTION"}

    refused = run("catchup", "Seveas-train", "--since", "yesterday", "--json")
    assert refused.returncode == 2 and "--since 'yesterday'" in refused.stderr
    assert json.loads(refused.stdout)["error"].startswith("--since")

    # The test database may hold other tests' channels: this part names its own.
    marked = _json(
        run(
            "catchup",
            "Seveas-train",
            "--since",
            "2010-08-17",
            "--channel",
            "ubuntu",
            "--mark-read",
            "--json",
        )
    )
    assert marked["markedRead"] == [section["channelId"]]
    # The person now exists, and the channel's catch-up starts at the marker.
    after = _json(run("catchup", "Seveas-train", "--channel", "ubuntu", "--json"))
    assert after["known"] is True
    (again,) = after["channels"]
    assert again["since"] == marked["generatedAt"]
    assert {e["kind"] for e in again["entries"]} == {"QUESTION"}
