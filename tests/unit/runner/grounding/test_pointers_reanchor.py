"""Quote re-anchoring: exact, normalized, then bounded fuzzy with coverage and density gates.
Whatever tier matches, the stored pointer slices the message to the stored quote."""

from __future__ import annotations

import unicodedata
from difflib import SequenceMatcher
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.core.contract import Artifact, ChunkSummary, ContentPointer
from runner.grounding import pointers
from runner.grounding.normalize import normalize_text
from runner.grounding.pointers import MatchKind, PointerError, ResolvedPointer, resolve_pointer
from runner.grounding.validate import validate_output

TEXT = normalize_text(
    "Déjà vu 👩🏽‍💻: run `docker compose up -d --wait` then “check the logs” — "
    "Привет, 世界! q\u0303 marks the spot. Config: <key>value</key> & more"
)
TEXTS = {"m1": TEXT, "m2": "an unrelated second message about helm charts and ingress"}


def resolve(
    quote: str, start: int = 0, end: int = 1, occurrence: int = 0, message: str = "m1"
) -> ResolvedPointer:
    pointer = ContentPointer(message_id=message, char_start=start, char_end=end, quote=quote)
    resolved = resolve_pointer(pointer, TEXTS, occurrence)
    assert TEXTS[message][resolved.char_start : resolved.char_end] == resolved.text
    return resolved


def test_right_offsets_are_kept() -> None:
    start = TEXT.index("docker")
    resolved = resolve("docker compose", start, start + 14)
    assert resolved.match is MatchKind.OFFSETS and resolved.char_start == start


def test_wrong_offsets_are_reanchored_exactly() -> None:
    resolved = resolve("docker compose up -d --wait", 3, 9)
    assert resolved.match is MatchKind.EXACT and resolved.text == "docker compose up -d --wait"


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("&lt;key&gt;value&lt;/key&gt; &amp; more", "<key>value</key> & more"),  # copied escaped
        ("Привет, 世界!", "Привет, 世界!"),
    ],
)
def test_escaped_and_non_latin_quotes_anchor_exactly(quote: str, expected: str) -> None:
    resolved = resolve(quote)
    assert resolved.match is MatchKind.EXACT and resolved.text == expected


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("RUN `docker   compose UP -d", "run `docker compose up -d"),
        ('"check the logs" - привет', "“check the logs” — Привет"),
        (unicodedata.normalize("NFD", "Déjà vu"), "Déjà vu"),  # decomposed accents
        ("Déjà vu 👩‍💻", "Déjà vu 👩🏽‍💻"),  # skin tone left out
    ],
)
def test_normalized_matches_fold_whitespace_case_lookalikes_and_forms(
    quote: str, expected: str
) -> None:
    resolved = resolve(quote)
    assert resolved.match is MatchKind.NORMALIZED
    assert resolved.text.casefold() == normalize_text(expected).casefold()


def test_fuzzy_match_survives_small_changes_and_keeps_the_verbatim_text() -> None:
    resolved = resolve(
        "run docker compose up -d --wait then check the logs"
    )  # backticks/quotes lost
    assert resolved.match is MatchKind.FUZZY
    assert resolved.text == "run `docker compose up -d --wait` then “check the logs"


def test_fuzzy_span_never_splits_a_combining_mark() -> None:
    resolved = resolve("Привет, 世界! q marks the")
    assert resolved.match is MatchKind.FUZZY
    assert resolved.text.startswith("Привет") and "q\u0303 marks" in resolved.text


@pytest.mark.parametrize(
    "quote",
    [
        "start the containers in detached mode and wait",  # a paraphrase: coverage gate
        "Déjà vu ... marks the spot",  # an elision: density gate
        "kubectl apply -f deployment.yaml",  # not there at all
        "an unrelated second message",  # in another message than the one cited
        "run `dockr",  # too short for fuzzy matching
    ],
)
def test_quotes_that_are_not_in_the_cited_message_are_rejected(quote: str) -> None:
    with pytest.raises(PointerError):
        resolve(quote)


def test_no_quote_and_bad_offsets_or_unknown_message_are_rejected() -> None:
    with pytest.raises(PointerError, match="outside"):
        resolve_pointer(ContentPointer(message_id="m1", char_start=5, char_end=5000), TEXTS)
    with pytest.raises(PointerError, match="not in the window"):
        resolve_pointer(ContentPointer(message_id="zz", char_start=0, char_end=1, quote="x"), TEXTS)


def test_repeated_quotes_map_to_successive_occurrences() -> None:
    text = (
        "retry: pip install -U pip\nthen again: pip install -U pip\n"
        "and once more PIP INSTALL -u pip"
    )
    pointer = {"message_id": "a", "char_start": 0, "char_end": 3, "quote": "pip install -U pip"}
    summary = ChunkSummary(
        chunk_summary="x",
        signal_quality={"level": "medium", "reason": "x"},
        artifacts=[Artifact(kind="command", title=f"cmd {i}", pointer=pointer) for i in range(3)],
    )
    result = validate_output(summary, {"a": text})
    starts = [a.pointer.char_start for a in result.output.artifacts]
    assert starts == [text.index("pip"), text.index("pip install", 20), text.index("PIP")]
    assert result.pointer_matches["artifacts"] == [
        MatchKind.EXACT,
        MatchKind.EXACT,
        MatchKind.NORMALIZED,
    ]
    for artifact in result.output.artifacts:
        assert (
            text[artifact.pointer.char_start : artifact.pointer.char_end] == artifact.pointer.quote
        )


class CountingMatcher(SequenceMatcher[str]):
    """difflib's matcher, recording the length of each text it compares a quote with: the
    quadratic work of the fuzzy tier."""

    windows: list[int] = []

    def __init__(self, isjunk: Any, a: str, b: str, autojunk: bool = True) -> None:
        CountingMatcher.windows.append(len(a))
        super().__init__(isjunk, a, b, autojunk)


def test_fuzzy_matching_is_bounded_on_huge_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work is counted, not timed: the sequence matcher (the only step whose cost grows
    with the product of two lengths) runs a few times on windows the size of the quote, never
    on the message, whose length only costs linear searches."""
    monkeypatch.setattr(pointers, "SequenceMatcher", CountingMatcher)
    monkeypatch.setattr(CountingMatcher, "windows", [])
    words = [f"word{i % 997}" for i in range(30_000)]
    text = " ".join(words)[:199_000]
    quote = " ".join(words[20_000:20_220]).replace("word12", "wrod12")  # long and slightly off
    pointer = ContentPointer(message_id="x", char_start=0, char_end=1, quote=quote)
    resolved = resolve_pointer(pointer, {"x": text})
    assert resolved.match is MatchKind.FUZZY and len(resolved.text) == pytest.approx(
        len(quote), rel=0.05
    )
    # At most 8 alignments examined in each of the two passes (the quote's occurrence, then
    # its last match), each in a window of the quote's length and a little slack.
    assert 1 <= len(CountingMatcher.windows) <= 16
    assert max(CountingMatcher.windows) <= len(quote) * 1.25 + 8
    CountingMatcher.windows.clear()
    too_long = text + " " + text[:10_000]  # over FUZZY_MAX_TEXT_CHARS: no fuzzy search at all
    with pytest.raises(PointerError):
        resolve_pointer(pointer, {"x": too_long})
    assert CountingMatcher.windows == []


ALPHABET = st.sampled_from(list("abc xyz\n\téü👍🏽世界q\u0303<>&\"'—") + ["👩‍💻"])


@settings(max_examples=150, deadline=None)
@given(st.lists(ALPHABET, min_size=1, max_size=80), st.data())
def test_any_verbatim_quote_with_wrong_offsets_resolves_to_itself(
    chars: list[str], data: st.DataObject
) -> None:
    text = normalize_text("".join(chars))
    if not text:
        return
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    quote = text[start:end]
    shift = data.draw(st.integers(-5, 5))
    pointer = ContentPointer(
        message_id="m", char_start=max(0, start + shift), char_end=max(1, end + shift), quote=quote
    )
    resolved = resolve_pointer(pointer, {"m": text})
    assert resolved.match in {MatchKind.OFFSETS, MatchKind.EXACT}
    assert text[resolved.char_start : resolved.char_end] == quote == resolved.text
