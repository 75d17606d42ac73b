"""The warning that names the chunks the offline rules read: every chunk named, whatever the
reasons, reasons grouped, and never longer than a warning may be."""

from __future__ import annotations

from runner.digests.pipeline import chunk_ranges, fallback_warning


def entry(chunk: int, reason: str) -> dict[str, object]:
    return {"chunk": chunk, "reason": reason, "message_ids": [str(chunk)]}


def test_no_fallback_no_warning() -> None:
    assert fallback_warning([]) is None


def test_chunks_with_the_same_reason_are_named_together() -> None:
    warning = fallback_warning(
        [entry(0, "HTTP 503"), entry(1, "HTTP 503"), entry(2, "circuit open"), entry(4, "HTTP 503")]
    )
    assert warning is not None and warning.code == "CHUNKS_EXTRACTED_OFFLINE"
    assert warning.message == (
        "4 chunks extracted by the offline rules (0-2, 4); chunks 0-1, 4: HTTP 503; "
        "chunk 2: circuit open"
    )


def test_every_chunk_is_named_when_the_reasons_do_not_fit() -> None:
    failures = [entry(i, f"reason {i} " + "x" * 300) for i in range(0, 60, 2)]
    warning = fallback_warning(failures)
    assert warning is not None and len(warning.message) <= 1000
    assert warning.message.startswith(
        "30 chunks extracted by the offline rules (" + chunk_ranges(list(range(0, 60, 2))) + ")"
    )
    assert "chunk 0: reason 0" in warning.message and warning.message.endswith("; ...")


def test_chunk_ranges() -> None:
    assert chunk_ranges([5, 0, 1, 2, 7, 8]) == "0-2, 5, 7-8"
    assert chunk_ranges([3]) == "3"
