"""The overall fraction across a job's phases, the estimate of the time left, and the map's
progress against a chunk plan that may be cut again."""

from __future__ import annotations

import pytest

from runner.core.progress import (
    PHASE_WEIGHTS,
    ChunkPlanProgress,
    JobPhase,
    eta_seconds,
    overall_fraction,
)


def test_the_phase_weights_make_a_whole() -> None:
    assert sum(PHASE_WEIGHTS.values()) == pytest.approx(1.0)
    assert max(PHASE_WEIGHTS, key=PHASE_WEIGHTS.__getitem__) is JobPhase.MAP


def test_a_queued_job_is_at_zero_and_a_stored_one_near_the_end() -> None:
    assert overall_fraction(JobPhase.QUEUED) == 0.0
    assert 0.9 < overall_fraction(JobPhase.STORE) < 1.0


def test_the_fraction_grows_through_the_phases_and_the_map() -> None:
    states = [
        (JobPhase.QUEUED, 0, 0),
        (JobPhase.READING, 0, 0),
        (JobPhase.THREADING, 0, 0),
        *[(JobPhase.MAP, done, 40) for done in range(41)],
        (JobPhase.REDUCE, 40, 40),
        (JobPhase.VALIDATE, 40, 40),
        (JobPhase.STORE, 40, 40),
    ]
    fractions = [overall_fraction(*state) for state in states]
    assert fractions == sorted(fractions)
    mapping = [overall_fraction(JobPhase.MAP, done, 40) for done in range(41)]
    assert len(set(mapping)) == len(mapping)  # every chunk moves the bar
    assert overall_fraction(JobPhase.READING) < overall_fraction(JobPhase.THREADING)
    # The map's end is exactly where the reduce starts: no jump back, no jump ahead.
    assert overall_fraction(JobPhase.MAP, 40, 40) == pytest.approx(
        overall_fraction(JobPhase.REDUCE)
    )


def test_only_the_map_counts_steps_and_counts_are_clamped() -> None:
    assert overall_fraction(JobPhase.REDUCE, 0, 1) == overall_fraction(JobPhase.REDUCE, 1, 1)
    assert overall_fraction(JobPhase.MAP, 9, 3) == overall_fraction(JobPhase.MAP, 3, 3)
    assert overall_fraction(JobPhase.MAP, 5, 0) == overall_fraction(JobPhase.MAP)
    assert overall_fraction(JobPhase.MAP, -2, 4) == overall_fraction(JobPhase.MAP)


def test_no_estimate_before_the_map_has_shown_its_pace() -> None:
    assert eta_seconds(JobPhase.READING, 0, 0, 0.04, 10.0) is None
    assert eta_seconds(JobPhase.THREADING, 0, 0, 0.1, 10.0) is None
    assert eta_seconds(JobPhase.MAP, 2, 100, 0.2, 10.0) is None  # 2 chunks, 2%
    assert eta_seconds(JobPhase.MAP, 3, 100, 0.2, 10.0) is not None  # 3 chunks
    assert eta_seconds(JobPhase.MAP, 1, 20, 0.2, 10.0) is not None  # 5%
    assert eta_seconds(JobPhase.REDUCE, 0, 0, 0.9, 10.0) is not None  # the map is over


def test_the_estimate_extrapolates_the_pace_so_far() -> None:
    assert eta_seconds(JobPhase.MAP, 10, 20, 0.25, 30.0) == pytest.approx(90.0)
    assert eta_seconds(JobPhase.STORE, 20, 20, 1.0, 30.0) == 0.0
    assert eta_seconds(JobPhase.MAP, 10, 20, 0.0, 30.0) is None


def test_the_plan_total_stays_when_chunks_are_cut_again() -> None:
    plan = ChunkPlanProgress(10)
    reported = [plan.mapped(index) for index in range(4)]
    # Chunks 4..9 did not fit: cut again into 30 smaller ones, sharing their 6 units.
    plan.recut(4, 30)
    reported += [plan.mapped(4 + index) for index in range(30)]
    assert plan.total == 10
    assert reported == sorted(reported)
    assert reported[-1] == 10 and plan.done == 10


def test_work_thrown_away_by_a_recut_does_not_take_the_count_back() -> None:
    plan = ChunkPlanProgress(8)
    for index in range(6):  # 4 and 5 were mapped before chunk 3 turned out too large
        plan.mapped(index)
    assert plan.done == 6
    plan.recut(3, 10)
    assert plan.done == 6  # held, not 3
    after = [plan.mapped(3 + index) for index in range(10)]
    assert after == sorted(after) and min(after) == 6 and after[-1] == 8
