"""Helpers for the offline extractor tests: tiny local parsers for the sample channel and the
real chat logs (the real importers live elsewhere; these only build WindowMessage lists), and
a pipeline runner. Holds no tests itself."""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runner.core.window import Window, WindowMessage
from runner.digests.pipeline import PipelineResult, run_pipeline
from runner.extract.offline import OfflineExtractor
from runner.extract.offline.threads import Participants
from runner.grounding.normalize import normalize_text
from tests.support.paths import DATA_DIR, SAMPLE

DATA = DATA_DIR
CHUNK_TOKENS = 1500


def load_sample() -> Window:
    messages = []
    channel = ""
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        channel = record["channel"]
        messages.append(
            WindowMessage(
                message_id=record["id"],
                author=record["author"],
                ts=datetime.fromisoformat(record["ts"].replace("Z", "+00:00")),
                normalized_text=normalize_text(record["text"]),
                reply_to=record.get("reply_to"),
            )
        )
    return Window(channel_name=channel, messages=tuple(messages))


def window_of(channel: str, rows: list[tuple[str, datetime, str]]) -> Window:
    """A window from (author, ts, raw text) rows; ids are their line numbers."""
    messages = tuple(
        WindowMessage(
            message_id=f"L{i}", author=author, ts=ts, normalized_text=normalize_text(text)
        )
        for i, (author, ts, text) in enumerate(rows, start=1)
        if text.strip()
    )
    return Window(channel_name=channel, messages=messages)


_IRC = re.compile(r"^\[(\d\d):(\d\d)\] <([^>]+)> (.*)$")
_GITTER = re.compile(r"^(?:\d+ )?\[(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)\] <([^>]+)> ?(.*)$")


def parse_irc(path: Path) -> Window:
    """`[HH:MM] <nick> text` lines; other lines (joins, renames) are skipped."""
    rows = []
    day = datetime(2010, 8, 17, tzinfo=UTC)
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _IRC.match(line)
        if match:
            ts = day + timedelta(hours=int(match.group(1)), minutes=int(match.group(2)))
            rows.append((match.group(3), ts, match.group(4)))
    return window_of("ubuntu", rows)


def parse_gitter(path: Path, channel: str) -> Window:
    """`[YYYY-MM-DD HH:MM:SS] <nick> text` lines, optionally numbered; separators skipped."""
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _GITTER.match(line)
        if match:
            ts = datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}+00:00")
            rows.append((match.group(3), ts, match.group(4)))
    return window_of(channel, rows)


def parse_discord_csv(path: Path) -> Window:
    """DiscordChatExporter CSV (`;`-separated: AuthorID;Author;Date;Content;...)."""
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=";")
        for record in reader:
            ts = datetime.strptime(record["Date"], "%d-%b-%y %I:%M %p").replace(tzinfo=UTC)
            text = record["Content"]
            if record.get("Attachments"):
                text = f"{text}\n{record['Attachments']}".strip()
            rows.append((record["Author"], ts, text))
    return window_of("cc-general", rows)


async def run_offline(window: Window, chunk_tokens: int = CHUNK_TOKENS) -> PipelineResult:
    return await run_pipeline(window, OfflineExtractor(), chunk_tokens=chunk_tokens)


T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def _message(i: int, author: str, text: str, reply_to: str | None = None) -> WindowMessage:
    return WindowMessage(
        message_id=f"x{i}",
        author=author,
        ts=T0 + timedelta(minutes=i),
        normalized_text=normalize_text(text),
        reply_to=reply_to,
    )


def _window(*rows: tuple[str, str] | tuple[str, str, str]) -> Window:
    messages = [
        _message(i, row[0], row[1], row[2] if len(row) > 2 else None) for i, row in enumerate(rows)
    ]
    return Window(channel_name="test", messages=tuple(messages))


PEOPLE = Participants.of(
    [_message(0, "Ana Souza", "hi"), _message(1, "bob", "hi"), _message(2, "gos", "hi")]
)
