"""A pointer the model gives without a quote counts offsets in the redacted text it was shown;
past a placeholder those offsets are shifted against the real message, so the extractor turns
them into the quote the model meant and validation re-anchors it on the real text."""

from __future__ import annotations

from runner.core.contract import (
    Artifact,
    ArtifactKind,
    ChunkSummary,
    ContentPointer,
    KnowledgeItem,
    SignalQuality,
)
from runner.extract.llm import quote_offsets_off_loop, quote_offsets_the_model_saw
from runner.grounding.pointers import resolve_pointer
from runner.llm.redaction import RedactionSession

TEXT = "mail ops@billing.example.com then run: sudo systemctl restart nginx"
COMMAND = "sudo systemctl restart nginx"


def summary_pointing_at(pointer: ContentPointer) -> ChunkSummary:
    return ChunkSummary.model_validate(
        {
            "chunk_summary": "restart nginx",
            "signal_quality": SignalQuality.model_validate({"level": "low", "reason": "one tip"}),
            "artifacts": [Artifact(kind=ArtifactKind.COMMAND, title="restart", pointer=pointer)],
            "knowledge_items": [
                KnowledgeItem.model_validate(
                    {
                        "key": "K1",
                        "kind": "command",
                        "title": "Restart nginx",
                        "content_pointer": pointer,
                        "message_ids": ["7"],
                    }
                )
            ],
        }
    )


def test_offsets_in_the_redacted_text_are_read_there_and_anchor_on_the_real_text() -> None:
    session = RedactionSession()
    seen = session.redact(TEXT)
    assert "ops@billing" not in seen
    start = seen.index(COMMAND)
    pointer = ContentPointer(message_id="7", char_start=start, char_end=start + len(COMMAND))
    # Sliced on the real text, the model's offsets land on other characters.
    assert TEXT[pointer.char_start : pointer.char_end] != COMMAND
    fixed = quote_offsets_the_model_saw(summary_pointing_at(pointer), {"7": TEXT}, session)
    knowledge_pointer = fixed.knowledge_items[0].content_pointer
    assert knowledge_pointer is not None
    for meant in (fixed.artifacts[0].pointer, knowledge_pointer):
        assert meant.quote == COMMAND
        assert resolve_pointer(meant, {"7": TEXT}).text == COMMAND


def test_without_redaction_or_with_a_quote_pointers_are_left_alone() -> None:
    start = TEXT.index(COMMAND)
    plain = ContentPointer(message_id="7", char_start=start, char_end=start + len(COMMAND))
    summary = summary_pointing_at(plain)
    assert quote_offsets_the_model_saw(summary, {"7": TEXT}, None) is summary
    quoted = plain.model_copy(update={"quote": COMMAND})
    kept = quote_offsets_the_model_saw(summary_pointing_at(quoted), {"7": TEXT}, RedactionSession())
    assert kept.artifacts[0].pointer == quoted


async def test_off_the_loop_the_quotes_and_placeholders_are_the_same() -> None:
    other = "call +1 415 555 0100 or ops@billing.example.com, then: sudo systemctl restart nginx"
    texts = {"7": TEXT, "8": other}
    shown = RedactionSession()
    shown.redact(TEXT)  # the request gave out a placeholder first
    start = shown.redact(other).index(COMMAND)  # offsets in the text the model saw
    pointer = ContentPointer(message_id="8", char_start=start, char_end=start + len(COMMAND))
    summary = summary_pointing_at(pointer)
    on_loop, off_loop = RedactionSession(), RedactionSession()
    on_loop.redact(TEXT)
    off_loop.redact(TEXT)
    expected = quote_offsets_the_model_saw(summary, texts, on_loop)
    assert expected != summary  # the offsets were moved past a placeholder
    assert await quote_offsets_off_loop(summary, texts, off_loop) == expected
    assert off_loop.redaction_counts() == on_loop.redaction_counts()
    assert off_loop.redact(other) == on_loop.redact(other)
    assert await quote_offsets_off_loop(summary, texts, None) is summary
