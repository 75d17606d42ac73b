"""Cited prose without a server: the validator checks every overview and highlight sentence
like a claim, anchors each citation to exact characters, checks title, keywords and topics;
the Markdown footnotes number each source once, contiguously, quoting it exactly."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from runner.core.contract import ChunkSummary, Digest
from runner.core.merge import merge_outputs
from runner.core.window import Window, WindowMessage
from runner.grounding.citations import MAX_ANCHOR_CHARS, anchor_span
from runner.grounding.footnotes import FootnotedSentence, Section, Source, footnoted_markdown
from runner.grounding.validate import validate_output

TEXTS = {
    "100": "We decided to move the staging cluster to Kubernetes 1.29 next sprint.",
    "101": "I'll write the migration runbook for the staging cluster by Friday.\nThanks all!",
    "102": "Lunch at noon? The ramen place is open again.",
    "103": "Has anyone benchmarked pgbouncer in transaction mode with prepared statements?",
}


def digest(**fields: Any) -> Digest:
    base: dict[str, Any] = {
        "title": "Staging cluster moves to Kubernetes",
        "coverage": {"messages_total": 4, "messages_covered": 4},
        "signal_quality": {"level": "medium", "reason": "a decision"},
    }
    base.update(fields)
    return Digest.model_validate(base)


def sentence(text: str, *ids: str) -> dict[str, Any]:
    return {"sentence": text, "message_ids": list(ids)}


def test_supported_sentences_are_kept_with_exact_anchors() -> None:
    result = validate_output(
        digest(
            overview=[
                sentence("The staging cluster moves to Kubernetes 1.29 next sprint.", "100"),
                sentence("A migration runbook for the staging cluster is due by Friday.", "101"),
            ]
        ),
        TEXTS,
    )
    assert result.rejections == []
    assert [s.message_ids for s in result.output.overview] == [["100"], ["101"]]
    (first,), (second,) = result.anchors["overview"]
    assert TEXTS["100"][first.char_start : first.char_end] == TEXTS["100"].rstrip()
    quote = TEXTS["101"][second.char_start : second.char_end]
    assert quote == "I'll write the migration runbook for the staging cluster by Friday."
    assert result.audit.overview_cited_share == 1.0


def test_fabricated_ids_and_unrelated_citations_are_never_kept_as_cited() -> None:
    result = validate_output(
        digest(
            overview=[
                sentence("The staging cluster moves to Kubernetes 1.29.", "999"),  # invented id
                sentence("The team agreed to migrate billing to Rust.", "102"),  # unrelated
                sentence("Nobody cited anything here."),
                # One real source and one unrelated: kept, the unrelated citation removed.
                sentence("The staging cluster moves to Kubernetes 1.29.", "100", "102"),
            ],
            highlights=[sentence("Ramen is the new deployment tool.", "100")],
        ),
        TEXTS,
    )
    reasons = {(r.field, r.reason.split(":", 1)[0]) for r in result.rejections}
    assert reasons == {
        ("overview", "unknown_message_id"),
        ("overview", "low_support"),
        ("overview", "no_citation"),
        ("highlights", "low_support"),
    }
    assert [s.message_ids for s in result.output.overview] == [["100"]]
    assert result.output.highlights == []
    audit = result.audit.as_json()
    assert audit["fields"]["overview"] == {"proposed": 4, "kept": 1}
    assert audit["fields"]["highlights"] == {"proposed": 1, "kept": 0}
    assert audit["reasons"] == {
        "low_support": 2,
        "no_citation": 1,
        "unknown_message_id": 1,
        "unrelated_citation_removed": 1,
    }
    assert audit["overview_cited_share"] == 1.0


def test_title_keywords_and_topics_use_the_words_of_the_window() -> None:
    result = validate_output(
        digest(
            title="Quarterly revenue forecast",
            search_keywords=["kubernetes", "staging cluster", "revenue forecast", "pgbouncer"],
            topics=[
                {"title": "Kubernetes migration", "message_ids": ["100", "101"]},
                {"title": "Quarterly revenue", "message_ids": ["100"]},
                {"title": "pgbouncer", "message_ids": []},
            ],
        ),
        TEXTS,
        channel_name="platform",
    )
    assert result.output.search_keywords == ["kubernetes", "staging cluster", "pgbouncer"]
    assert [t.title for t in result.output.topics] == ["Kubernetes migration"]
    assert result.output.title == "platform: Kubernetes migration"
    assert result.audit.title_replaced
    fields = sorted(r.field for r in result.rejections)
    assert fields == ["search_keywords", "title", "topics", "topics"]
    # The channel's own name may title its digest.
    named = validate_output(
        digest(title="platform: staging cluster"), TEXTS, channel_name="platform"
    )
    assert named.output.title == "platform: staging cluster" and named.rejections == []


def test_anchors_stay_on_one_line_and_short() -> None:
    long_line = "word " * 80 + "kubernetes upgrade plan. Second sentence here."
    text = "intro line\n" + long_line + "\nlast line about kubernetes"
    start, end = anchor_span("kubernetes upgrade plan", text)
    assert "\n" not in text[start:end] and 0 < end - start <= MAX_ANCHOR_CHARS
    assert text[start:end] == text[start:end].strip()


def _source(message_id: str, minute: int, quote: str) -> Source:
    ts = datetime(2024, 5, 1, 10, 0, tzinfo=UTC) + timedelta(minutes=minute)
    return Source(message_id, f"user{message_id}", ts, quote)


def test_footnotes_are_contiguous_each_source_once_with_exact_quotes() -> None:
    a, b, c = (
        _source("12", 2, "the quoted words"),
        _source("7", 5, 'say "yes"'),
        _source("3", 9, "c"),
    )
    markdown = footnoted_markdown(
        [
            Section(
                None, (FootnotedSentence("First.", (a, b)), FootnotedSentence("Second.", (b,)))
            ),
            Section("Highlights", (FootnotedSentence("Third.", (c, a)),), bullets=True),
        ]
    )
    body, notes = markdown.rsplit("\n\n", 1)
    assert body == "First.[^1][^2] Second.[^2]\n\n## Highlights\n\n- Third.[^3][^1]"
    assert notes.splitlines() == [
        '[^1]: user12, 2024-05-01 10:02 UTC, "the quoted words" (message 12)',
        '[^2]: user7, 2024-05-01 10:05 UTC, "say "yes"" (message 7)',
        '[^3]: user3, 2024-05-01 10:09 UTC, "c" (message 3)',
    ]
    used = [int(n) for n in re.findall(r"\[\^(\d+)\](?!:)", body)]
    assert sorted(set(used)) == list(range(1, len(set(used)) + 1))


def test_the_deterministic_merge_cites_its_overview() -> None:
    """When a reduce call fails, the plain merge's overview is the chunks' summaries citing
    their notable messages, then the decisions: the validator keeps only what is supported."""
    start = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    window = Window(
        channel_name="platform",
        messages=tuple(
            WindowMessage(mid, "ann", start + timedelta(minutes=i), text)
            for i, (mid, text) in enumerate(TEXTS.items())
        ),
    )
    summaries = [
        ChunkSummary.model_validate(
            {
                "chunk_summary": "The staging cluster moves to Kubernetes 1.29 " + "soon " * 100,
                "signal_quality": {"level": "medium", "reason": "a decision"},
                "decisions": [
                    {"text": "Move the staging cluster to Kubernetes 1.29", "message_ids": ["100"]}
                ],
                "notable_message_ids": ["100"],
            }
        ),
        ChunkSummary.model_validate(
            {
                "chunk_summary": "Everyone loved the quarterly offsite.",
                "signal_quality": {"level": "low", "reason": "chatter"},
                "notable_message_ids": ["102"],
            }
        ),
    ]
    merged, _ = merge_outputs(list(summaries), window, "")
    assert all(len(s.sentence) <= 400 and not s.sentence.endswith(" so") for s in merged.overview)
    checked = validate_output(merged, TEXTS, channel_name="platform")
    assert [s.message_ids for s in checked.output.overview] == [["100"], ["100"]]
    assert [r.label for r in checked.rejections] == ["Everyone loved the quarterly offsite."]
    assert [s.sentence for s in checked.output.highlights] == [
        "Move the staging cluster to Kubernetes 1.29"
    ]


def test_chat_text_cannot_forge_footnotes_or_headings() -> None:
    """A message (or a model's sentence) holding `[^1]` or a line that starts `## ` stays text:
    the Markdown's footnotes are those the renderer numbered, its headings those it wrote."""
    forged = _source("5", 1, "see [^1] and\n[^2]: fake source")
    markdown = footnoted_markdown(
        [
            Section(None, (FootnotedSentence("Claim [^9] here.\n## Not a heading", (forged,)),)),
        ]
    )
    assert not any(line.startswith("## ") for line in markdown.splitlines())
    definitions = [line for line in markdown.splitlines() if re.match(r"\[\^\d+\]:", line)]
    assert definitions == [
        '[^1]: user5, 2024-05-01 10:01 UTC, "see \\[^1\\] and \\[^2\\]: fake source" (message 5)'
    ]
    references = re.findall(r"(?<!\\)\[\^(\d+)\](?!:)", markdown)
    assert references == ["1"]
