"""The sliding-window circuit breaker (last 10 calls, opens at >70% failures with at least 5
samples, half-opens after 60 s), alone and in front of a failing endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from runner.core.chunks import chunk_messages
from runner.core.extractor import ChunkFailed
from runner.digests.pipeline import run_pipeline
from runner.llm.breaker import BreakerState, CircuitBreaker, CircuitOpen
from runner.llm.fake import FakeLLM, completion, error
from tests.support.llm import make_extractor, make_window, minimal_summary


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def state_of(breaker: CircuitBreaker) -> BreakerState:
    """The breaker's state, read anew: a call that records an outcome may change it, which a
    type checker narrowing `breaker.state` after an assertion would not see."""
    return breaker.state


def breaker(clock: Clock) -> CircuitBreaker:
    return CircuitBreaker("test", clock=clock)


def record(b: CircuitBreaker, outcomes: str) -> None:
    """'F' a failure, 'S' a success, each as an admitted call."""
    for outcome in outcomes:
        b.before_call()
        b.record_failure() if outcome == "F" else b.record_success()


def test_needs_five_samples_before_opening() -> None:
    b = breaker(Clock())
    record(b, "FFFF")
    assert state_of(b) is BreakerState.CLOSED
    record(b, "F")
    assert state_of(b) is BreakerState.OPEN


def test_opens_only_above_seventy_percent_of_the_last_ten() -> None:
    b = breaker(Clock())
    record(b, "SSS" + "FFFFFFF")  # 7 of 10: not more than 70%
    assert state_of(b) is BreakerState.CLOSED
    record(b, "F")  # the window slides: S S F F F F F F F F → 8 of 10
    assert state_of(b) is BreakerState.OPEN


def test_old_outcomes_leave_the_window() -> None:
    b = breaker(Clock())
    record(b, "FFFF" + "S" * 10)
    record(b, "FFFF")  # 4 of the last 10 failed
    assert state_of(b) is BreakerState.CLOSED


def test_half_open_admits_one_probe_and_its_outcome_decides() -> None:
    clock = Clock()
    b = breaker(clock)
    record(b, "FFFFF")
    with pytest.raises(CircuitOpen) as refused:
        b.before_call()
    assert refused.value.retry_in == pytest.approx(60)
    clock.now += 59.9
    assert state_of(b) is BreakerState.OPEN
    clock.now += 0.1
    assert state_of(b) is BreakerState.HALF_OPEN
    b.before_call()  # the probe
    with pytest.raises(CircuitOpen):
        b.before_call()  # only one probe at a time
    b.record_failure()
    assert state_of(b) is BreakerState.OPEN  # another full cooldown
    clock.now += 60
    b.before_call()
    b.record_success()
    assert state_of(b) is BreakerState.CLOSED
    record(b, "FFF")  # a fresh window: the earlier failures are forgotten
    assert state_of(b) is BreakerState.CLOSED


def test_an_abandoned_probe_frees_the_slot() -> None:
    clock = Clock()
    b = breaker(clock)
    record(b, "FFFFF")
    clock.now += 60
    b.before_call()
    b.abandon()
    b.before_call()  # admitted again


async def test_a_dead_endpoint_trips_the_breaker_and_chunks_fail_fast() -> None:
    clock = Clock()
    healthy = False

    def respond(body: dict[str, Any]) -> Any:
        if not healthy:
            return error(503, "overloaded")
        return completion(tool="emit_chunk_summary", arguments=minimal_summary(body))

    endpoint = FakeLLM(respond)
    extractor = make_extractor(endpoint, breaker=CircuitBreaker("dead", clock=clock), max_retries=2)
    window = make_window([f"line {i} about the flaky registry mirror" for i in range(60)])
    chunks = chunk_messages(list(window.messages), 100)
    assert len(chunks) >= 6
    reasons = []
    for chunk in chunks[:4]:
        with pytest.raises(ChunkFailed) as failed:
            await extractor.extract_chunk(chunk, [])
        reasons.append(failed.value.reason)
    # 3 attempts for the first chunk, then 2 more open the breaker mid-way through the second.
    assert len(endpoint.requests) == 5
    assert "HTTP 503" in reasons[0]
    assert all(reason.startswith("circuit open") for reason in reasons[1:])
    assert state_of(extractor.breaker) is BreakerState.OPEN

    clock.now += 60
    healthy = True
    summary = await extractor.extract_chunk(chunks[4], [])
    assert summary.chunk_summary
    assert state_of(extractor.breaker) is BreakerState.CLOSED
    assert len(endpoint.requests) == 6


async def test_while_open_the_chunks_are_read_offline_without_calling_the_endpoint() -> None:
    clock = Clock()
    b = CircuitBreaker("down", clock=clock)
    record(b, "FFFFF")
    endpoint = FakeLLM(lambda body: completion(tool="emit_chunk_summary", arguments={}))
    extractor = make_extractor(endpoint, breaker=b)
    window = make_window(["the registry is down again", "yes, since noon"])
    result = await run_pipeline(window, extractor, chunk_tokens=4000)
    assert endpoint.requests == []  # neither the map nor the reduce reached it
    assert result.failed_chunks == []
    assert [f["chunk"] for f in result.fallback_chunks] == [0]
    assert str(result.fallback_chunks[0]["reason"]).startswith("circuit open")
    [warning] = [w for w in result.warnings if w.code == "CHUNKS_EXTRACTED_OFFLINE"]
    assert "chunk 0: circuit open" in warning.message


def test_refusal_says_what_a_call_would_get_without_admitting_one() -> None:
    clock = Clock()
    b = breaker(clock)
    assert b.refusal() is None
    record(b, "FFFFF")
    refused = b.refusal()
    assert isinstance(refused, CircuitOpen) and refused.retry_in == 60.0
    clock.now += 61
    assert b.refusal() is None  # half open: the probe may go
    b.before_call()  # and asking did not take the probe's place


async def test_opening_logs_the_circuit_breaker_triggered_event_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoint = FakeLLM(lambda body: error(503, "overloaded"))
    extractor = make_extractor(
        endpoint, breaker=CircuitBreaker("dead", clock=Clock()), max_retries=2
    )
    window = make_window([f"line {i} about the flaky registry mirror" for i in range(60)])
    chunks = chunk_messages(list(window.messages), 100)
    with caplog.at_level("WARNING", logger="runner.llm.breaker"):
        for chunk in chunks[:3]:
            with pytest.raises(ChunkFailed):
                await extractor.extract_chunk(chunk, [])
    events = [r for r in caplog.records if r.name == "runner.llm.breaker"]
    # The fifth failed attempt opens the breaker; the refused calls after it log nothing more.
    assert len(events) == 1
    event = events[0]
    assert event.getMessage() == (
        "digest.circuit_breaker_triggered endpoint=dead window_failures=5 window_size=5"
    )
    assert event.__dict__["event"] == "digest.circuit_breaker_triggered"
    assert (event.__dict__["window_failures"], event.__dict__["window_size"]) == (5, 5)
    assert event.__dict__["endpoint"] == "dead"


def test_the_event_counts_the_window_it_judged(caplog: pytest.LogCaptureFixture) -> None:
    b = breaker(Clock())
    record(b, "SSS" + "FFFFFFF")
    with caplog.at_level("WARNING", logger="runner.llm.breaker"):
        record(b, "F")  # the window slides to S S F F F F F F F F
    assert state_of(b) is BreakerState.OPEN
    [event] = caplog.records
    assert event.__dict__["event"] == "digest.circuit_breaker_triggered"
    assert (event.__dict__["window_failures"], event.__dict__["window_size"]) == (8, 10)
