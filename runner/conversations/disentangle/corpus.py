"""Reader for the Ubuntu IRC disentanglement corpus (Kummerfeld and others, ACL 2019).

As copied under ../shared/data/chat/ubuntu_irc_disentanglement: `NAME.raw.txt` (one message a
line, counted from 0) beside `NAME.annotation.txt` (lines `A B -`: the later of A and B answers
the earlier; a self-link starts a conversation). Only messages from the first annotated one on
are scored; the lines before are context. Used by the trainer (scripts/train_disentangle.py),
the evaluator and the benchmark; the runtime never reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.conversations.disentangle.message import Message

CORPUS_DIR = Path("chat") / "ubuntu_irc_disentanglement"  # under the shared data directory

_STAMP = re.compile(r"\[(\d{1,2}):(\d{2})\]")


@dataclass(frozen=True)
class AnnotatedLog:
    """One annotated log: its messages and, per scored message, its gold parents (a self-link,
    i.e. `parents[i] == {i}`, starts a conversation)."""

    name: str
    messages: list[Message]
    gold: dict[int, set[int]]  # scored message -> the messages it answers (or itself)

    @property
    def first_scored(self) -> int:
        return min(self.gold)


def parse_line(line: str, previous_seconds: float) -> tuple[Message, float]:
    """One raw line as a `Message`, and its time in seconds since the log's first midnight.

    `[HH:MM] <nick> text` is a message, `[HH:MM] * nick text` an action by nick, and `=== ...`
    a system notice (joins, quits, nick changes), which carries no time of its own and so takes
    the previous line's. A time of day that goes backwards by more than 12 hours crossed midnight.
    """
    if line.startswith("==="):
        return Message(author="", ts=previous_seconds, text=line[4:], system=True), previous_seconds
    match = _STAMP.match(line)
    seconds = previous_seconds
    rest = line
    if match:
        seconds = int(match[1]) * 3600 + int(match[2]) * 60 + (previous_seconds // 86400) * 86400
        if seconds < previous_seconds - 12 * 3600:
            seconds += 86400
        rest = line[match.end() :].lstrip()
    if rest.startswith("<"):
        nick, _, text = rest[1:].partition(">")
        return Message(author=nick, ts=seconds, text=text.strip()), seconds
    if rest.startswith("* "):
        parts = rest[2:].split(" ", 1)
        return Message(author=parts[0], ts=seconds, text=rest), seconds
    return Message(author="", ts=seconds, text=rest, system=True), seconds


def read_raw(path: Path) -> list[Message]:
    messages: list[Message] = []
    seconds = 0.0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        message, seconds = parse_line(line, seconds)
        messages.append(message)
    return messages


def read_annotation(path: Path) -> dict[int, set[int]]:
    gold: dict[int, set[int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        numbers = [int(part) for part in line.split() if part != "-"]
        if not numbers:
            continue
        later = max(numbers)
        earlier = min(numbers)
        gold.setdefault(later, set()).add(earlier)
    return gold


def read_split(data_dir: Path, split: str) -> list[AnnotatedLog]:
    """Every annotated log of `split` ("train" or "dev"), in file-name order."""
    directory = data_dir / CORPUS_DIR / split
    logs = []
    for raw in sorted(directory.glob("*.raw.txt")):
        name = raw.name[: -len(".raw.txt")]
        annotation = raw.with_name(f"{name}.annotation.txt")
        if annotation.is_file():
            logs.append(AnnotatedLog(name, read_raw(raw), read_annotation(annotation)))
    return logs
