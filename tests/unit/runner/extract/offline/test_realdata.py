"""The offline extractor on real public chat logs and meeting transcripts (../shared/data):
grounded, non-trivial digests with nothing rejected by the validator."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.core.contract import ArtifactKind, KnowledgeKind, SignalLevel
from runner.core.window import Window
from runner.digests.pipeline import PipelineResult
from runner.grounding.footnotes import FootnotedSentence, Section, Source, footnoted_markdown
from runner.grounding.pointers import MatchKind
from tests.support.contract import content_of, quote_of
from tests.support.offline import (
    DATA,
    parse_discord_csv,
    parse_gitter,
    parse_irc,
    run_offline,
    window_of,
)


def _require(relative: str) -> Path:
    path = DATA / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


def _assert_grounded(window: Window, result: PipelineResult) -> None:
    """Nothing rejected, every pointer exact, every citation in the window."""
    assert result.map_rejections == []
    assert result.validation.rejections == []
    assert result.validation.output_flags == []
    texts = {m.message_id: m.normalized_text for m in window.messages}
    digest = result.digest
    pointers = [a.pointer for a in digest.artifacts]
    pointers += [k.content_pointer for k in digest.knowledge_items if k.content_pointer]
    for pointer in pointers:
        assert texts[pointer.message_id][pointer.char_start : pointer.char_end] == pointer.quote
    for kinds in result.validation.pointer_matches.values():
        assert all(kind in (None, MatchKind.OFFSETS) for kind in kinds)
    for link in digest.links:
        assert any(link.url in texts[m] for m in link.message_ids)
    assert digest.coverage.messages_covered == digest.coverage.messages_total == len(texts)
    _assert_cited_overview(window, result)


def _unescaped(markdown: str) -> str:
    """What CommonMark shows for text escaped by runner.core.markdown_text: a backslash before ASCII
    punctuation is the punctuation alone."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def _assert_cited_overview(window: Window, result: PipelineResult) -> None:
    """An extractive overview of a few sentences, every one citing messages of the window,
    each citation anchored to exact characters; its Markdown numbers sources contiguously and
    quotes them exactly."""
    by_id = {m.message_id: m for m in window.messages}
    digest = result.digest
    assert 3 <= len(digest.overview) <= 12
    assert result.validation.audit.overview_cited_share == 1.0
    sentences = []
    for sentence, anchors in zip(
        digest.overview, result.validation.anchors["overview"], strict=True
    ):
        assert sentence.message_ids and [a.message_id for a in anchors] == sentence.message_ids
        sources = []
        for anchor in anchors:
            message = by_id[anchor.message_id]
            quote = message.normalized_text[anchor.char_start : anchor.char_end]
            assert quote and "\n" not in quote and quote == quote.strip()
            sources.append(Source(message.message_id, message.author, message.ts, quote))
        sentences.append(FootnotedSentence(sentence.sentence, tuple(sources)))
    markdown = footnoted_markdown([Section(None, tuple(sentences))])
    body, notes = markdown.rsplit("\n\n", 1)
    markers = [int(n) for n in re.findall(r"\[\^(\d+)\]", body)]
    lines = notes.splitlines()
    assert sorted(set(markers)) == list(range(1, len(lines) + 1))
    for number, line in enumerate(lines, start=1):
        match = re.fullmatch(
            r'\[\^(\d+)\]: (.+), (\d{4}-\d\d-\d\d \d\d:\d\d) UTC, "(.*)" \(message (.+)\)', line
        )
        assert match is not None and int(match[1]) == number, line
        # The footnote is Markdown: its author, quote and id are escaped text (runner.core.markdown_text).
        message = by_id[_unescaped(match[5])]
        # ... and on one line, runs of spaces as one, as a renderer shows them anyway.
        assert _unescaped(match[4]) in " ".join(message.normalized_text.split())
        assert _unescaped(match[2]) == message.author


async def test_ubuntu_irc_questions_and_links() -> None:
    window = parse_irc(_require("chat/ubuntu_irc/2010-08-17_18.raw.txt"))
    result = await run_offline(window)
    _assert_grounded(window, result)
    digest = result.digest
    assert len(digest.open_questions) >= 15
    assert all(q.asked_by for q in digest.open_questions)
    assert len(digest.links) >= 20
    assert any("help.ubuntu.com" in link.url for link in digest.links)
    # Questions answered in the channel become Q&A items citing the question and the answer.
    qa = [k for k in digest.knowledge_items if k.content and k.content.startswith("Q: ")]
    assert len(qa) >= 10 and all(len(k.message_ids) == 2 for k in qa)
    xorg = next(k for k in qa if "xorg.conf" in k.title)
    assert "optional" in content_of(xorg)  # Pici's answer, addressed to the asker by nick
    commands = [a for a in digest.artifacts if a.kind == ArtifactKind.COMMAND]
    assert any("dpkg --get-selections" in quote_of(a.pointer) for a in commands)
    # Nicknames are how people are addressed, not what the channel is about.
    titles = {t.title.casefold() for t in digest.topics}
    assert not titles & {"bazhang", "jacob_", "yanick_", "ubottu"}
    assert digest.signal_quality.level in (SignalLevel.MEDIUM, SignalLevel.HIGH)


async def test_discord_csv_code_artifacts() -> None:
    window = parse_discord_csv(_require("chat/discord/komodo_cc-general_48.csv"))
    result = await run_offline(window)
    _assert_grounded(window, result)
    digest = result.digest
    kinds = {a.kind for a in digest.artifacts}
    assert {ArtifactKind.COMMAND, ArtifactKind.LOG} <= kinds
    assert len(digest.artifacts) >= 15
    # Hex dumps are evidence (log artifacts), not reusable knowledge.
    for item in digest.knowledge_items:
        if item.content_pointer:
            assert not quote_of(item.content_pointer).startswith("0100000")
    cli = [a for a in digest.artifacts if quote_of(a.pointer).startswith("./komodo-cli")]
    assert cli and all(a.kind == ArtifactKind.COMMAND for a in cli)
    assert any(
        "mempool" in t.title.casefold() or "bet" in t.title.casefold() for t in digest.topics
    )


async def test_gitter_docker_largest_file() -> None:
    window = parse_gitter(_require("chat/gitter/manual_docker.txt"), "docker")
    assert len(window.messages) > 1000
    result = await run_offline(window)
    _assert_grounded(window, result)
    digest = result.digest
    assert digest.open_questions and digest.knowledge_items and digest.topics
    assert any(
        a.kind == ArtifactKind.COMMAND and "docker run" in quote_of(a.pointer)
        for a in digest.artifacts
    )
    assert {"docker", "container"} <= {t.title.casefold() for t in digest.topics}
    assert 3 <= len(digest.overview) <= 12 and "docker" in digest.overview_text().casefold()
    assert result.duration_seconds < 30  # measured ~1 s; a guard against quadratic blow-ups


async def test_meeting_transcript() -> None:
    path = _require("meetings/qmsum/education_13.json")
    turns = json.loads(path.read_text(encoding="utf-8"))["meeting_transcripts"]
    start = datetime(2020, 1, 1, tzinfo=UTC)
    rows = [
        (t["speaker"], start + timedelta(seconds=20 * i), t["content"]) for i, t in enumerate(turns)
    ]
    window = window_of("committee", rows)
    result = await run_offline(window)
    _assert_grounded(window, result)
    digest = result.digest
    titles = {t.title for t in digest.topics}
    assert {"Wales", "CPS"} <= titles
    assert digest.open_questions
    assert any(
        k.kind in (KnowledgeKind.FACT, KnowledgeKind.TROUBLESHOOTING, KnowledgeKind.HOWTO)
        for k in digest.knowledge_items
    )
