"""A job's progress as a person reads it: the phase it is in, one overall fraction across all
phases, and an estimate of the time left.

The phases are the same words for every kind of job; a kind skips the ones it has no step for
(a document digest reads, maps and stores), and the fraction simply moves past them. The
database keeps the fraction from going back (db/queries.sql `update_job_progress`), so a retry
that reads its window again shows the phase it is in without undoing the bar.
"""

from __future__ import annotations

from enum import StrEnum


class JobPhase(StrEnum):
    """The step a job is at, in the order a channel digest passes them."""

    QUEUED = "queued"  # created, no worker has claimed it (or it waits for a retry)
    READING = "reading"  # a worker claimed it and reads its input
    # threads the messages into conversations and plans the chunks (a report: splits its
    # question into the sub-questions its map gathers for, runner.reports.decompose)
    THREADING = "threading"
    # extracts chunk by chunk (a document digest: the summary; a report: the evidence of each
    # sub-question, then one step for its refinement round, runner.reports.research)
    MAP = "map"
    REDUCE = "reduce"  # merges the chunks into one digest (a report: writes its final answer)
    VALIDATE = "validate"  # checks every claim against the messages
    STORE = "store"  # writes the result


# The share of the whole job each phase stands for. The map is where the time goes on any
# window worth a progress bar (one model call per chunk); reading and threading a large window
# take seconds, the steps after the map one call or none.
PHASE_WEIGHTS: dict[JobPhase, float] = {
    JobPhase.QUEUED: 0.0,
    JobPhase.READING: 0.04,
    JobPhase.THREADING: 0.08,
    JobPhase.MAP: 0.78,
    JobPhase.REDUCE: 0.05,
    JobPhase.VALIDATE: 0.02,
    JobPhase.STORE: 0.03,
}

# An estimate of the time left is given once the map has shown its pace: this share of its
# chunks, or this many of them, whichever comes first (or once the map is over).
ETA_MIN_MAP_SHARE = 0.05
ETA_MIN_MAP_CHUNKS = 3

_ORDER = list(JobPhase)


def overall_fraction(phase: JobPhase, done: int = 0, total: int = 0) -> float:
    """How much of the whole job is done (0..1) at the start of `phase` plus `done` of its
    `total` steps (only the map counts steps; a total of 0 counts as none done)."""
    start = sum(PHASE_WEIGHTS[earlier] for earlier in _ORDER[: _ORDER.index(phase)])
    counted = phase is JobPhase.MAP and total > 0
    within = min(1.0, max(0.0, done / total)) if counted else 0.0
    return min(1.0, start + PHASE_WEIGHTS[phase] * within)


def eta_seconds(
    phase: JobPhase, chunks_done: int, chunks_total: int, fraction: float, elapsed_seconds: float
) -> float | None:
    """Seconds left for a running job at `fraction` after `elapsed_seconds`, extrapolated at the
    pace so far; None until the map has shown that pace (see ETA_MIN_MAP_*)."""
    position = _ORDER.index(phase)
    map_position = _ORDER.index(JobPhase.MAP)
    if position < map_position:
        return None
    if position == map_position:
        shown = chunks_done >= ETA_MIN_MAP_CHUNKS or (
            chunks_total > 0 and chunks_done / chunks_total >= ETA_MIN_MAP_SHARE
        )
        if not shown:
            return None
    if fraction <= 0.0 or elapsed_seconds < 0.0:
        return None
    return max(0.0, elapsed_seconds * (1.0 - min(fraction, 1.0)) / fraction)


class ChunkPlanProgress:
    """The map's progress against the chunk plan made before it started: the total is fixed
    then. When chunks must be cut again (a model whose context turned out smaller), the new
    chunks share the units of the ones they replace, so done still ends at the total and the
    count reported never goes back."""

    def __init__(self, planned: int) -> None:
        self.total = planned
        self._units: list[float] = [1.0] * planned
        self._mapped = 0.0
        self._reported = 0

    def mapped(self, index: int) -> int:
        """Chunk `index` of the current plan was mapped; returns the chunks done to report."""
        self._mapped += self._units[index]
        # A small tolerance: the shares of a re-cut do not always sum back to a whole number.
        self._reported = max(self._reported, min(self.total, int(self._mapped + 1e-6)))
        return self._reported

    def recut(self, kept: int, chunks: int) -> None:
        """Chunks from `kept` on are replaced by `chunks` new ones (all of 0 .. kept - 1 were
        mapped): what they stood for is spread over the new ones."""
        left = self.total - sum(self._units[:kept])
        self._units = self._units[:kept] + [left / chunks if chunks else 0.0] * chunks
        self._mapped = sum(self._units[:kept])

    @property
    def done(self) -> int:
        """The chunks done so far, as reported: it never goes back."""
        return self._reported
