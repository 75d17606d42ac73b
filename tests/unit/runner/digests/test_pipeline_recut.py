"""The pipeline cuts again the chunks a model turns out too small for (ChunkTooLarge), without
losing or repeating any part of any message, even when the first chunk that does not fit starts
in the middle of a message split over several chunks; chunks before it are kept."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from itertools import pairwise

from runner.core.chunks import Chunk
from runner.core.contract import ChunkSummary, Digest
from runner.core.extractor import (
    ChunkTooLarge,
    ExtractionUsage,
    KnownItem,
    MappedChunk,
    PipelineWarning,
)
from runner.core.merge import merge_outputs
from runner.core.progress import JobPhase
from runner.core.window import Window, WindowMessage
from runner.digests.pipeline import PipelineHooks, run_pipeline
from tests.support.llm import make_window


class SmallModelExtractor:
    """Accepts chunks of at most `limit` tokens; a bigger one fails with the size that fits
    (what the LLM extractor does once it learned the context)."""

    name = "small-model"
    uses_known_items = True

    def __init__(self, limit: int, *, first_ok: int = 0, seed: int = 0) -> None:
        self.limit = limit
        self.first_ok = first_ok  # chunks below this index are accepted whatever their size
        self.usage = ExtractionUsage()
        self.warnings: list[PipelineWarning] = []
        self.accepted: list[Chunk] = []
        self.final: dict[int, Chunk] = {}  # the last chunk accepted at each position
        self.refused = 0
        self._rng = random.Random(seed)

    async def prepare(self) -> None:
        pass

    def max_chunk_tokens(self) -> None:  # the test cuts chunks of its own size
        return None

    def fingerprint(self) -> str:
        return f"small-model/{self.limit}"

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        await asyncio.sleep(self._rng.uniform(0, 0.01))
        if chunk.token_count > self.limit and chunk.index >= self.first_ok:
            self.refused += 1
            raise ChunkTooLarge(f"chunk {chunk.index} is too large", self.limit)
        self.accepted.append(chunk)
        self.final[chunk.index] = chunk
        return ChunkSummary.model_validate(
            {
                "chunk_summary": f"{len(chunk.parts)} parts",
                "signal_quality": {"level": "low", "reason": "scripted"},
                "notable_message_ids": chunk.message_ids[:1],
            }
        )

    async def extract_fallback(self, chunk: Chunk) -> ChunkSummary | None:
        return None  # a chunk that never fits fails, so the test sees it

    async def synthesize_digest(
        self, chunks: list[MappedChunk], window: Window, top: list[WindowMessage]
    ) -> Digest:
        digest, _ = merge_outputs([chunk.summary for chunk in chunks], window, "")
        return digest


def assert_every_character_mapped_once(window: Window, chunks: list[Chunk]) -> None:
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for chunk in chunks:
        for part in chunk.parts:
            spans[part.message.message_id].append((part.start, part.end))
    for message in window.messages:
        covered = sorted(spans[message.message_id])
        assert covered, message.message_id
        assert covered[0][0] == 0 and covered[-1][1] == len(message.normalized_text)
        for (_, end), (start, _) in pairwise(covered):
            assert end == start, (message.message_id, covered)


def window_with_a_huge_message() -> Window:
    texts = [f"short message {i} about the staging cluster rollout" for i in range(30)]
    texts.insert(12, " ".join(f"line {i}: kubectl rollout status failed" for i in range(700)))
    return make_window(texts)


async def test_chunks_that_do_not_fit_are_cut_again_without_gaps_or_repeats() -> None:
    window = window_with_a_huge_message()
    extractor = SmallModelExtractor(limit=900)
    result = await run_pipeline(window, extractor, chunk_tokens=3000, concurrency=4)
    assert extractor.refused >= 1
    assert result.failed_chunks == []
    final = [extractor.final[index] for index in range(result.chunk_count)]
    assert all(chunk.token_count <= 900 for chunk in final)
    assert_every_character_mapped_once(window, final)


async def test_chunks_before_the_first_refused_one_are_kept() -> None:
    window = make_window(
        [f"message {i}: the rollout of region {i % 5} is paused " * 6 for i in range(120)]
    )
    extractor = SmallModelExtractor(limit=900, first_ok=2)
    result = await run_pipeline(window, extractor, chunk_tokens=3000, concurrency=1)
    assert extractor.refused == 1 and result.failed_chunks == []
    first_size = [chunk.index for chunk in extractor.accepted if chunk.token_count > 900]
    assert first_size == [0, 1]  # mapped once, at the first size, and kept
    final = [extractor.final[index] for index in range(result.chunk_count)]
    assert final[:2] == extractor.accepted[:2] and len(extractor.accepted) == len(final)
    assert_every_character_mapped_once(window, final)


async def test_a_refused_chunk_that_starts_inside_a_message_is_cut_again_from_its_start() -> None:
    window = window_with_a_huge_message()
    extractor = SmallModelExtractor(limit=900, first_ok=3)
    result = await run_pipeline(window, extractor, chunk_tokens=1500, concurrency=1)
    assert extractor.refused == 1 and result.failed_chunks == []
    huge = max(window.messages, key=lambda m: len(m.normalized_text))
    first_size = extractor.accepted[:3]  # chunk 0: short messages; 1, 2: parts of `huge`
    assert [c.parts[0].message is huge for c in first_size] == [False, True, True]
    final = [extractor.final[index] for index in range(result.chunk_count)]
    assert_every_character_mapped_once(window, final)
    # Chunk 3 continued `huge`: every chunk holding a part of it was cut again, from its start;
    # chunk 0 was kept.
    assert final[0] is first_size[0]
    assert final[1].parts[0].message is huge and final[1].parts[0].start == 0
    assert all(c.token_count <= 900 for c in final[1:])


async def test_the_recut_does_not_depend_on_timing() -> None:
    window = window_with_a_huge_message()
    shapes = set()
    for seed in range(4):
        extractor = SmallModelExtractor(limit=900, seed=seed)
        result = await run_pipeline(window, extractor, chunk_tokens=3000, concurrency=4)
        final = [extractor.final[index] for index in range(result.chunk_count)]
        shapes.add(tuple(chunk.content_hash for chunk in final))
    assert len(shapes) == 1


async def test_a_model_too_small_for_any_chunk_fails_them_with_the_reason() -> None:
    window = make_window([f"message {i} " * 20 for i in range(10)])
    extractor = SmallModelExtractor(limit=10)
    result = await run_pipeline(window, extractor, chunk_tokens=400, concurrency=2)
    assert result.failed_chunks and all(
        "too large" in str(failure["reason"]) for failure in result.failed_chunks
    )


async def test_progress_keeps_the_planned_total_through_a_recut() -> None:
    """The chunk total is in the first report and never changes, though the re-cut makes more
    chunks than planned; the count done never goes back and ends at it."""
    window = window_with_a_huge_message()
    extractor = SmallModelExtractor(limit=900)
    seen: list[tuple[JobPhase, int, int]] = []

    async def on_progress(phase: JobPhase, done: int, total: int) -> None:
        seen.append((phase, done, total))

    result = await run_pipeline(
        window,
        extractor,
        chunk_tokens=3000,
        concurrency=4,
        hooks=PipelineHooks(on_progress=on_progress),
    )
    assert extractor.refused >= 1
    mapping = [state for state in seen if state[0] is JobPhase.MAP]
    planned = mapping[0][2]
    assert 0 < planned < result.chunk_count
    assert {total for _, _, total in seen} == {planned}
    done = [count for _, count, _ in seen]
    assert done == sorted(done) and done[-1] == planned
    assert [phase for phase, _, _ in seen][-2:] == [JobPhase.REDUCE, JobPhase.VALIDATE]
