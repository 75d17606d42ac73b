"""Chunking: whole messages, a token budget, big messages split with their offsets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape

from runner.core.chunks import chunk_messages
from runner.core.tokens import count_tokens
from runner.core.window import WindowMessage

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def msg(i: int, text: str) -> WindowMessage:
    return WindowMessage(str(i), f"user{i % 3}", T0 + timedelta(seconds=i), text)


def test_messages_pack_under_budget_and_stay_whole() -> None:
    window = [msg(i, f"message number {i} about <tags> & ampersands") for i in range(300)]
    chunks = chunk_messages(window, 500)
    assert len(chunks) > 1
    assert all(chunk.token_count <= 500 for chunk in chunks)
    ids = [part.message.message_id for chunk in chunks for part in chunk.parts]
    assert ids == [m.message_id for m in window]
    assert all(part.part_count == 1 for chunk in chunks for part in chunk.parts)
    assert '<message id="0" author="user0" ts="2024-01-01T00:00:00+00:00">' in chunks[0].xml
    assert "&lt;tags&gt; &amp; ampersands</message>" in chunks[0].xml


def test_big_message_split_into_parts_that_cover_it_exactly() -> None:
    big = msg(1, "\n".join(f"line {i}: " + "word " * 20 for i in range(400)))
    chunks = chunk_messages([msg(0, "before"), big, msg(2, "after")], 800)
    parts = [p for c in chunks for p in c.parts if p.message.message_id == "1"]
    assert len(parts) > 1
    assert "".join(p.text for p in parts) == big.normalized_text
    assert [p.start for p in parts[1:]] == [p.end for p in parts[:-1]]
    assert all(count_tokens(p.serialize()).tokens <= 800 for p in parts)
    assert f'part="2/{len(parts)}" offset="{parts[1].start}"' in parts[1].serialize()


def test_deterministic() -> None:
    window = [msg(i, f"text {i} " * (i % 7 + 1)) for i in range(100)]
    first = chunk_messages(window, 300)
    second = chunk_messages(window, 300)
    assert [c.content_hash for c in first] == [c.content_hash for c in second]
    assert chunk_messages([], 300) == []


def test_texts_short_enough_to_skip_counting_really_fit() -> None:
    """split_message keeps a text whole without counting when 5 x its length is within the
    budget; the worst cases for that bound (escaped '&', 4-byte characters, rare scripts) must
    still fit when counted."""
    budget = 300
    text_budget = budget - 48  # the line overhead chunking reserves
    length = text_budget // 5
    worst = (
        "&" * length,
        "𝔘" * length,
        "ꙮ" * length,
        "<>" * (length // 2),
        "\x00a" * (length // 2),
    )
    for text in worst:
        chunks = chunk_messages([msg(0, text)], budget)
        assert len(chunks) == 1 and len(chunks[0].parts) == 1
        assert count_tokens(escape(text)).tokens <= text_budget


def _threaded(i: int, conversation: str, words: int) -> WindowMessage:
    return WindowMessage(
        f"m{i}",
        "ann",
        datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
        " ".join(["word"] * words),
        conversation=conversation,
    )


def test_a_conversation_that_fits_an_empty_chunk_is_never_split() -> None:
    a = [_threaded(i, "a", 40) for i in range(3)]
    b = [_threaded(10 + i, "b", 40) for i in range(3)]
    line_tokens = count_tokens(chunk_messages(a[:1], 10_000)[0].xml + "\n").tokens
    budget = line_tokens * 4  # a and b hold three messages each: only one fits a chunk
    chunks = chunk_messages(a + b, budget)
    assert [chunk.message_ids for chunk in chunks] == [["m0", "m1", "m2"], ["m10", "m11", "m12"]]
    # Without conversations the same messages are packed greedily, splitting b.
    plain = chunk_messages(
        [WindowMessage(m.message_id, m.author, m.ts, m.normalized_text) for m in a + b], budget
    )
    assert [chunk.message_ids for chunk in plain] == [["m0", "m1", "m2", "m10"], ["m11", "m12"]]


def test_a_conversation_bigger_than_a_chunk_is_split_between_its_messages() -> None:
    long = [_threaded(i, "long", 40) for i in range(9)]
    line_tokens = count_tokens(chunk_messages(long[:1], 10_000)[0].xml + "\n").tokens
    chunks = chunk_messages([_threaded(100, "short", 40), *long], line_tokens * 4)
    # The long one starts where the short one ends, and every chunk is full but the last.
    assert [len(chunk.message_ids) for chunk in chunks] == [4, 4, 2]
    assert [m for chunk in chunks for m in chunk.message_ids] == [
        "m100",
        *[f"m{i}" for i in range(9)],
    ]
