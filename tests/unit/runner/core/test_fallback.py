"""The warning of an offline fallback: what fell back first, then why; reasons cut, and left
out rather than the warning growing past its limit. A document digest's is worded the same."""

from __future__ import annotations

from runner.core.fallback import REASON_CHARS, WARNING_CHARS, offline_warning
from runner.documents.digest import summary_fallback_warning


def test_what_fell_back_then_each_reason() -> None:
    warning = offline_warning(
        "X_OFFLINE", "2 things read offline", [("a", "why a"), ("b", "why b")]
    )
    assert warning.code == "X_OFFLINE"
    assert warning.message == "2 things read offline; a: why a; b: why b"


def test_reasons_are_cut_and_left_out_when_they_do_not_fit() -> None:
    long = "y" * (REASON_CHARS + 50)
    warning = offline_warning("X", "what", [(f"part {i}", long) for i in range(10)])
    assert f"part 0: {'y' * REASON_CHARS}; " in warning.message
    assert "y" * (REASON_CHARS + 1) not in warning.message
    assert len(warning.message) <= WARNING_CHARS and warning.message.endswith("; ...")


def test_a_document_summary_fallback_says_what_and_why() -> None:
    warning = summary_fallback_warning("circuit open for the LLM endpoint; next probe in 59s")
    assert warning.code == "SUMMARY_EXTRACTED_OFFLINE"
    assert warning.message == (
        "the summary and key points were extracted by the offline rules; the model failed: "
        "circuit open for the LLM endpoint; next probe in 59s"
    )
