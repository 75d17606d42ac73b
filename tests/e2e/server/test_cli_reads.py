"""The reading commands as a user runs them (`digestd`'s main(); the data made by real `digestd`
processes: the sample channel imported and digested, a document digest and a report):
`channels`, `digests`, `show digest|report|document`, `open` and `conversations`, as text and as
--json, with ids given as numbers and as the API's global ids, and text from a hostile channel
that reaches the terminal without its escape sequences."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from schema.types.ids import (
    CHANNEL,
    DIGEST,
    DOCUMENT,
    DOCUMENT_DIGEST,
    REPORT,
    decode_global_id,
    global_id,
)
from tests.support.cli import CliResult, run_cli
from tests.support.paths import SAMPLE, shared_data
from tests.support.processes import digestd


@dataclass(frozen=True)
class Made:
    """What the module's setup made through the CLI: the channel, its digest, a document
    digest and a report, by row id, and where the commands run."""

    url: str
    home: Path
    channel: str
    channel_id: int
    digest_id: int
    document_digest_id: int
    document_id: int
    report_id: int

    def run(self, *args: str) -> CliResult:
        return run_cli(self.url, self.home, *args)

    def ok(self, *args: str) -> str:
        result = self.run(*args)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    def one_object(self, *args: str) -> dict[str, Any]:
        """The --json output of a command: one object on one line, ending with a newline."""
        out = self.ok(*args, "--json")
        assert out.endswith("}\n") and out.count("\n") == 1, out[-200:]
        value: dict[str, Any] = json.loads(out)
        return value


@pytest.fixture(scope="module")
def made(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Made:
    home = tmp_path_factory.mktemp("reads-home")
    channel = f"reads-{uuid.uuid4().hex[:8]}"

    def json_of(*args: str) -> dict[str, Any]:
        result = digestd(database_url, home, *args, "--json")
        assert result.returncode == 0, result.stderr[-2000:]
        # The commands that make data print one line ending with a newline, like the reads.
        assert result.stdout.endswith("}\n") and result.stdout.count("\n") == 1, result.stdout
        value: dict[str, Any] = json.loads(result.stdout)
        return value

    imported = json_of("import", str(SAMPLE), "--channel", channel, "--server", "reads")
    channel_gid = imported["channels"][0]["id"]
    job = json_of("digest", channel_gid, "--wait")["job"]
    pdf = shared_data("docs/pdf/pdflatex-4-pages.pdf")
    added = json_of("add-doc", str(pdf), "--query", "How are the pages laid out?", "--wait")
    reported = json_of(
        "report", "When is the release branch cut?", "--channel", channel_gid, "--wait"
    )

    def row(gid: str) -> int:
        return decode_global_id(gid)[1]

    return Made(
        url=database_url,
        home=home,
        channel=channel,
        channel_id=row(channel_gid),
        digest_id=row(job["digestId"]),
        document_digest_id=row(added["job"]["documentDigestId"]),
        document_id=row(added["document"]["id"]),
        report_id=row(reported["job"]["reportId"]),
    )


def test_channels_lists_the_channel_with_its_counts(made: Made) -> None:
    line = next(r for r in made.ok("channels").splitlines() if r.startswith(made.channel + " "))
    # name, server, messages, last digest, open questions, open action items, decisions in force
    assert re.fullmatch(
        rf"{made.channel}\s+reads\s+70\s+\d{{4}}-\d\d-\d\d \d\d:\d\d UTC\s+(\d+)\s+(\d+)\s+(\d+)",
        line,
    ), line
    listed = made.one_object("channels")["channels"]
    mine = next(c for c in listed if c["name"] == made.channel)
    assert mine["id"] == global_id(CHANNEL, made.channel_id) and mine["server"] == "reads"
    assert mine["messageCount"] == 70 and mine["lastDigestAt"]
    assert mine["openQuestions"] > 0 and mine["openActionItems"] > 0
    assert mine["decisionsInForce"] > 0
    counts = [int(n) for n in line.split()[-3:]]
    assert counts == [mine["openQuestions"], mine["openActionItems"], mine["decisionsInForce"]]


def test_digests_of_a_channel_by_name_and_by_global_id(made: Made) -> None:
    out = made.ok("digests", made.channel)
    rows = out.splitlines()
    assert rows[0].split() == ["ID", "MADE", "WINDOW", "MESSAGES", "SIGNAL", "TITLE"]
    assert rows[1].startswith(f"{made.digest_id} ") and " 70 " in rows[1]
    assert "2025-03-10 08:55 UTC → 2025-03-11 17:30 UTC" in rows[1]
    assert made.ok("digests", global_id(CHANNEL, made.channel_id)) == out
    assert made.ok("digests", str(made.channel_id)) == out
    listed = made.one_object("digests", made.channel)
    assert listed["channel"]["name"] == made.channel
    [digest] = listed["digests"]
    assert digest["id"] == global_id(DIGEST, made.digest_id) and digest["messageCount"] == 70
    assert digest["signalQuality"]["level"] in {"HIGH", "MEDIUM", "LOW"}

    missing = made.run("digests", "no-such-channel-here")
    assert missing.returncode == 1 and "no channel 'no-such-channel-here'" in missing.stderr


def test_show_digest_prints_the_markdown_digest_waits_printed(made: Made) -> None:
    shown = made.ok("show", "digest", str(made.digest_id))
    assert shown.startswith("# ") and f"digest {made.digest_id} · 70 messages" in shown
    assert "## Decisions" in shown and re.search(r"^\[\^1\]: ", shown, re.M)
    assert made.ok("show", "digest", global_id(DIGEST, made.digest_id)) == shown
    as_json = made.one_object("show", "digest", str(made.digest_id))["digest"]
    assert as_json["markdown"] + "\n" == shown
    assert as_json["channelId"] == global_id(CHANNEL, made.channel_id)

    wrong_kind = made.run("show", "digest", global_id(REPORT, made.report_id))
    assert wrong_kind.returncode == 2 and "is not a digest id" in wrong_kind.stderr
    absent = made.run("show", "digest", "999999")
    assert absent.returncode == 1 and "no digest 999999" in absent.stderr


def test_show_report_prints_its_markdown(made: Made) -> None:
    shown = made.ok("show", "report", global_id(REPORT, made.report_id))
    assert shown.startswith("# ") and "[^1]" in shown
    as_json = made.one_object("show", "report", str(made.report_id))["report"]
    assert as_json["id"] == global_id(REPORT, made.report_id)
    assert shown == as_json["markdown"] + "\n"


def test_show_document_prints_the_document_digest_as_markdown(made: Made) -> None:
    shown = made.ok("show", "document", str(made.document_digest_id))
    assert shown.startswith("# ") and "query: How are the pages laid out?" in shown
    assert "## Evidence" in shown and re.search(r"\(page:\d+:char:\d+-\d+, relevance", shown)
    # Its global id, and the document's own global id (its newest digest), show the same.
    assert made.ok("show", "document", global_id(DOCUMENT_DIGEST, made.document_digest_id)) == shown
    assert made.ok("show", "document", global_id(DOCUMENT, made.document_id)) == shown
    as_json = made.one_object("show", "document", str(made.document_digest_id))
    digest = as_json["documentDigest"]
    assert digest["payload"]["content_type"] == "digest/v1" and digest["markdown"] + "\n" == shown


def test_open_lists_questions_action_items_by_owner_and_decisions_in_force(made: Made) -> None:
    out = made.ok("open", made.channel)
    assert out.startswith(f"# Open in #{made.channel} on reads\n")
    sections = re.findall(r"^## (.+) \((\d+)\)$", out, re.M)
    assert [name for name, _ in sections] == [
        "Open questions",
        "Action items",
        "Decisions in force",
    ]
    owners = re.findall(r"^### (.+)$", out, re.M)
    assert "Marcus Lee" in owners and owners.index("Marcus Lee") < len(owners)
    assert "- Should the deploy pipeline run the database migrations" in out
    # Answered in its conversation (an alert rule asked for and taken on: "on it"), so not open.
    assert "Do we also need an alert when all 5 attempts fail?" not in out
    listed = made.one_object("open", global_id(CHANNEL, made.channel_id))
    assert [int(n) for _, n in sections] == [
        len(listed["openQuestions"]),
        sum(len(group["items"]) for group in listed["actionItemsByOwner"]),
        len(listed["decisionsInForce"]),
    ]
    # The same items the API's trackedItems(filter: {open: true}) lists: open, of two kinds.
    for item in listed["openQuestions"]:
        assert (item["kind"], item["status"]) == ("QUESTION", "OPEN")
    for group in listed["actionItemsByOwner"]:
        assert (
            all(item["owner"] == group["owner"] for item in group["items"])
            or group["owner"] is not None
        )
        assert all(item["status"] == "OPEN" for item in group["items"])
    assert all(item["status"] == "IN_FORCE" for item in listed["decisionsInForce"])
    assert listed["channel"]["name"] == made.channel


def test_conversations_lists_threads_with_participants_and_state(made: Made) -> None:
    rows = made.ok("conversations", made.channel).splitlines()
    assert rows[0].split() == ["ID", "STATE", "MESSAGES", "STARTED", "PARTICIPANTS", "TITLE"]
    thread = next(r for r in rows if "Are the batch fetches idempotent?" in r)
    assert re.search(r"\banswered\s+8\s+2025-03-10 09:05 UTC\s+Marcus Lee, ", thread), thread
    listed = made.one_object("conversations", made.channel, "--limit", "100")["conversations"]
    assert len(listed) == len(rows) - 1
    first = next(c for c in listed if c["title"].startswith("Are the batch fetches idempotent?"))
    assert first["state"] == "ANSWERED" and first["messageCount"] == 8
    assert first["participants"][0] == "Marcus Lee"
    assert len(made.one_object("conversations", made.channel, "--limit", "2")["conversations"]) == 2


def test_json_of_every_command_ends_with_a_newline(made: Made) -> None:
    for args in (
        ["channels"],
        ["digests", made.channel],
        ["show", "digest", str(made.digest_id)],
        ["show", "report", str(made.report_id)],
        ["show", "document", str(made.document_digest_id)],
        ["open", made.channel],
        ["conversations", made.channel],
    ):
        made.one_object(*args)  # one line, ending with "\n"
    added = made.one_object("schedule", "add", made.channel, "0 9 * * 1-5")["schedule"]["id"]
    for args in (["list"], ["pause", added], ["resume", added], ["delete", added]):
        made.one_object("schedule", *args)
    # An error is one object too, ending the same way.
    refused = made.run("show", "digest", "999999", "--json")
    assert refused.stdout == '{"error": "no digest 999999"}\n'


HOSTILE = [
    {
        "id": "h1",
        "author": "mallory\x1b]0;owned\x07",
        "ts": "2025-04-01T10:00:00Z",
        "text": "\x1b[2J\x1b[31mDo we ship today?\x1b[0m \u202eevil\u202c \x9b31m",
    },
    {
        "id": "h2",
        "author": "bob",
        "ts": "2025-04-01T10:01:00Z",
        "reply_to": "h1",
        "text": "bob: yes, we ship today\r\x08\x08 ok",
    },
]


def test_text_from_messages_reaches_the_terminal_without_control_characters(
    made: Made, tmp_path: Path
) -> None:
    export = tmp_path / "hostile.jsonl"
    export.write_text("\n".join(json.dumps(m) for m in HOSTILE) + "\n", encoding="utf-8")
    channel = f"hostile-{uuid.uuid4().hex[:8]}"
    made.ok("import", str(export), "--channel", channel)
    digest_id = made.one_object("digest", channel, "--wait")["job"]["digestId"]
    for args in (
        ["conversations", channel],
        ["open", channel],
        ["digests", channel],
        ["channels"],
        ["show", "digest", digest_id],
    ):
        out = made.ok(*args)
        unsafe = [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
        assert unsafe == [] and "\u202e" not in out, (args, out)
    text = made.ok("conversations", channel)
    assert "Do we ship today?" in text and "mallory" in text
    raw = made.ok("conversations", channel, "--json")
    assert "\x1b" not in raw and "\x9b" not in raw and "\u202e" not in raw
    # The JSON escapes them instead: the value a script reads is the stored text.
    [thread] = json.loads(raw)["conversations"]
    assert "\u202eevil\u202c" in thread["title"]
    assert thread["participants"] == ["mallory\x1b]0;owned\x07", "bob"]
