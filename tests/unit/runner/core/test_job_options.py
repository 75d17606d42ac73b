"""Typed job options (runner.core.job_options): what each kind stores is exactly the JSON it always
stored (rows already queued keep working, and the SQL keys active jobs on it), and a stored
object reads back to the same options."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from runner.core.job_options import ChannelDigestOptions, DocumentDigestOptions, ReportOptions
from runner.digests.window import window_options
from runner.documents.cache_key import query_hash
from runner.triggers import TriggerRefused, channel_digest_options

PARIS = timezone(timedelta(hours=1))


def _json_round_trip(stored: dict[str, Any]) -> dict[str, Any]:
    """What a jsonb column gives back for `stored`."""
    loaded: dict[str, Any] = json.loads(json.dumps(stored))
    return loaded


@pytest.mark.parametrize(
    "stored",
    [
        {},
        {"chunk_tokens": 800},
        {"since": "2025-03-11T00:00:00+00:00"},
        {"until": "2025-03-12T09:30:00+00:00"},
        {
            "chunk_tokens": 400,
            "since": "2025-03-11T00:00:00+00:00",
            "until": "2025-03-12T00:00:00+00:00",
        },
    ],
)
def test_a_stored_channel_job_reads_back_and_writes_the_same_json(stored: dict[str, Any]) -> None:
    options = ChannelDigestOptions.parse(stored)
    assert options.stored() == stored
    assert ChannelDigestOptions.parse(_json_round_trip(options.stored())) == options
    assert options.catch_up == ("since" in stored or "until" in stored)


def test_channel_options_read_as_the_dict_was_read() -> None:
    options = ChannelDigestOptions.parse(
        {"chunk_tokens": 500, "since": "2025-03-11T00:00:00+00:00", "until": ""}
    )
    assert options.chunk_tokens == 500
    assert options.since == datetime.fromisoformat("2025-03-11T00:00:00+00:00")
    assert options.since is not None and options.since.utcoffset() == timedelta(0)
    assert options.until is None  # "" was read as no bound
    assert ChannelDigestOptions.parse(None) == ChannelDigestOptions()


def test_a_triggered_channel_job_stores_what_the_dict_builder_stored() -> None:
    since, until = datetime(2025, 3, 11, 1, tzinfo=PARIS), datetime(2025, 3, 12)
    options = channel_digest_options(chunk_tokens=600, since=since, until=until)
    assert options.stored() == {"chunk_tokens": 600, **window_options(since, until)}
    assert options.stored()["since"] == "2025-03-11T00:00:00+00:00"
    assert channel_digest_options().stored() == {}
    assert channel_digest_options(until=until).stored() == {"until": "2025-03-12T00:00:00+00:00"}
    with pytest.raises(TriggerRefused):
        channel_digest_options(chunk_tokens=10)
    with pytest.raises(TriggerRefused):
        channel_digest_options(since=until, until=since)


def test_document_options_round_trip() -> None:
    # As db.documents.trigger_document_digest writes them.
    stored = {
        "query": "what changed in the API?",
        "query_hash": query_hash("what changed in the API?"),
    }
    options = DocumentDigestOptions.parse(stored)
    assert options.query == stored["query"] and options.query_hash == stored["query_hash"]
    assert options.stored() == stored
    assert DocumentDigestOptions.parse(_json_round_trip(stored)) == options
    # A document of a batch: the batch's end, as an aware UTC time and its ISO string.
    batch = {**stored, "batch_deadline": "2026-11-29T14:00:00+00:00"}
    options = DocumentDigestOptions.parse(batch)
    assert options.batch_deadline == datetime(2026, 11, 29, 14, tzinfo=UTC)
    assert options.stored() == batch


def _legacy_report_options(
    question: str, channel_ids: list[int], document_ids: list[int], window: dict[str, str]
) -> dict[str, Any]:
    """The report options as they were built from a dict before the typed model."""
    options: dict[str, Any] = {
        "question": question,
        "channel_ids": channel_ids,
        "document_ids": document_ids,
        **window,
    }
    options["request_hash"] = query_hash(json.dumps(options, sort_keys=True))
    return options


@pytest.mark.parametrize(
    "window",
    [
        {},
        window_options(datetime(2025, 3, 1, tzinfo=UTC), None),
        window_options(datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, 2, tzinfo=PARIS)),
    ],
)
def test_a_report_request_stores_the_same_json_and_hash(window: dict[str, str]) -> None:
    legacy = _legacy_report_options("what did we decide?", [3, 1], [7], window)
    options = ReportOptions.for_request("what did we decide?", [3, 1], [7], window)
    assert options.stored() == legacy
    assert options.request_hash == legacy["request_hash"]
    assert options.request() == {k: legacy[k] for k in sorted(legacy) if k != "request_hash"}
    assert list(options.request()) == sorted(options.request())
    read = ReportOptions.parse(_json_round_trip(legacy))
    assert read == options
    assert (read.channel_ids, read.document_ids) == ((3, 1), (7,))


def test_unknown_keys_are_ignored_when_reading() -> None:
    options = ReportOptions.parse({"question": "q", "channel_ids": [1], "future_key": True})
    assert options.question == "q" and "future_key" not in options.stored()
