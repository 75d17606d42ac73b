"""The pipeline with an extractor that maps several consecutive chunks per request
(PackingExtractor): the same chunks and the same known items per chunk as one a request would
give, packs bounded by count and tokens, cached chunks left out of a pack, and a re-cut that
loses or repeats nothing."""

from __future__ import annotations

import asyncio
import random

from runner.core.chunks import Chunk, iter_chunks
from runner.core.contract import ChunkSummary, Digest
from runner.core.extractor import (
    ChunkFailed,
    ChunkTooLarge,
    ExtractionUsage,
    KnownItem,
    MappedChunk,
    PackingExtractor,
    PipelineWarning,
)
from runner.core.merge import merge_outputs
from runner.core.window import Window, WindowMessage
from runner.digests.pipeline import PipelineHooks, run_pipeline
from tests.support.llm import make_window


class PackingModel:
    """Packs up to `per_request` chunks of at most `pack_limit` tokens; a chunk over `limit`
    tokens fails with the size that fits. Records each request's chunks and known items."""

    name = "packing-model"
    uses_known_items = True

    def __init__(
        self, per_request: int, *, pack_limit: int = 10**6, limit: int = 10**6, seed: int = 0
    ) -> None:
        self.per_request = per_request
        self.pack_limit = pack_limit
        self.limit = limit
        self.usage = ExtractionUsage()
        self.warnings: list[PipelineWarning] = []
        self.requests: list[tuple[list[Chunk], list[str]]] = []
        self.final: dict[int, Chunk] = {}
        self._rng = random.Random(seed)

    async def prepare(self) -> None:
        pass

    def max_chunk_tokens(self) -> None:
        return None

    def fingerprint(self) -> str:
        return "packing-model"

    def chunks_per_request(self) -> int:
        return self.per_request

    def pack_tokens(self) -> int:
        return self.pack_limit

    def _summary(self, chunk: Chunk) -> ChunkSummary:
        self.final[chunk.index] = chunk
        return ChunkSummary.model_validate(
            {
                "chunk_summary": f"{len(chunk.parts)} parts",
                "signal_quality": {"level": "low", "reason": "scripted"},
                "knowledge_items": [
                    {
                        "key": f"c{chunk.content_hash[:6]}.K1",
                        "kind": "fact",
                        "title": f"item of chunk {chunk.index}",
                        "content": chunk.parts[0].message.normalized_text[:40],
                        "message_ids": chunk.message_ids[:1],
                    }
                ],
                "notable_message_ids": chunk.message_ids[:1],
            }
        )

    async def extract_chunks(
        self, chunks: list[Chunk], known_items: list[KnownItem]
    ) -> list[ChunkSummary | ChunkFailed]:
        await asyncio.sleep(self._rng.uniform(0, 0.01))
        self.requests.append((chunks, [item.title for item in known_items]))
        return [
            ChunkTooLarge(f"chunk {c.index} is too large", self.limit)
            if c.token_count > self.limit
            else self._summary(c)
            for c in chunks
        ]

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        (outcome,) = await self.extract_chunks([chunk], known_items)
        if isinstance(outcome, ChunkFailed):
            raise outcome
        return outcome

    async def extract_fallback(self, chunk: Chunk) -> ChunkSummary | None:
        return None

    async def synthesize_digest(
        self, chunks: list[MappedChunk], window: Window, top: list[WindowMessage]
    ) -> Digest:
        digest, _ = merge_outputs([chunk.summary for chunk in chunks], window, "")
        return digest


def window_of(count: int) -> Window:
    return make_window([f"message {i}: region {i % 5} rollout paused " * 6 for i in range(count)])


def known_per_chunk(model: PackingModel) -> dict[int, list[str]]:
    return {chunk.index: known for chunks, known in model.requests for chunk in chunks}


async def test_packs_are_consecutive_chunks_up_to_the_count() -> None:
    model = PackingModel(3)
    assert isinstance(model, PackingExtractor)
    result = await run_pipeline(window_of(60), model, chunk_tokens=300, concurrency=2)
    packs = [[chunk.index for chunk in chunks] for chunks, _ in model.requests]
    assert sorted(index for pack in packs for index in pack) == list(range(result.chunk_count))
    assert all(pack == list(range(pack[0], pack[0] + len(pack))) for pack in packs)
    assert all(len(pack) == 3 for pack in packs[:-1]) and result.chunk_count > 6


async def test_packs_stay_within_their_token_budget() -> None:
    window = window_of(60)
    chunks = list(iter_chunks(window.messages, 300))
    room = 2 * max(chunk.token_count for chunk in chunks)
    model = PackingModel(4, pack_limit=room)
    await run_pipeline(window, model, chunk_tokens=300, concurrency=2)
    assert all(sum(c.token_count for c in pack) <= room for pack, _ in model.requests)
    assert max(len(pack) for pack, _ in model.requests) == 2


async def test_a_pack_is_given_the_items_of_the_packs_before_it() -> None:
    """At concurrency 1 each pack sees every earlier chunk's items, and every chunk of a pack
    the same ones: what its first chunk would have been given alone."""
    model = PackingModel(3)
    result = await run_pipeline(window_of(60), model, chunk_tokens=300, concurrency=1)
    known = known_per_chunk(model)
    for chunks, titles in model.requests:
        first = chunks[0].index
        assert titles == [f"item of chunk {i}" for i in range(first)]
    assert len(known) == result.chunk_count


async def test_the_known_items_do_not_depend_on_timing() -> None:
    shapes = set()
    for seed in range(4):
        model = PackingModel(3, seed=seed)
        await run_pipeline(window_of(80), model, chunk_tokens=300, concurrency=3)
        shapes.add(tuple(sorted((i, tuple(k)) for i, k in known_per_chunk(model).items())))
    assert len(shapes) == 1


async def test_cached_chunks_are_left_out_of_the_pack() -> None:
    store: dict[str, ChunkSummary] = {}

    async def save(key: str, summary: ChunkSummary) -> None:
        store[key] = summary

    async def load(key: str) -> ChunkSummary | None:
        return store.get(key)

    window = window_of(30)
    first = PackingModel(3)
    hooks = PipelineHooks(load_chunk=load, save_chunk=save)
    await run_pipeline(window, first, chunk_tokens=300, concurrency=1, hooks=hooks)
    # Forget the second chunk of the first pack: the next run sends only it.
    forgotten = [key for key, s in store.items() if s.knowledge_items[0].title.endswith(" 1")]
    del store[forgotten[0]]
    again = PackingModel(3)
    result = await run_pipeline(window, again, chunk_tokens=300, concurrency=1, hooks=hooks)
    assert [[c.index for c in chunks] for chunks, _ in again.requests] == [[1]]
    assert result.chunks_from_cache == result.chunk_count - 1


async def test_a_chunk_too_large_in_a_pack_is_cut_again_without_gaps_or_repeats() -> None:
    texts = [f"short message {i} about the staging cluster rollout" for i in range(30)]
    texts.insert(12, " ".join(f"line {i}: kubectl rollout status failed" for i in range(700)))
    window = make_window(texts)
    model = PackingModel(3, limit=900)
    result = await run_pipeline(window, model, chunk_tokens=3000, concurrency=2)
    assert result.failed_chunks == []
    final = [model.final[index] for index in range(result.chunk_count)]
    assert all(chunk.token_count <= 900 for chunk in final)
    spans: dict[str, list[tuple[int, int]]] = {}
    for chunk in final:
        for part in chunk.parts:
            spans.setdefault(part.message.message_id, []).append((part.start, part.end))
    for message in window.messages:
        covered = sorted(spans[message.message_id])
        assert covered[0][0] == 0 and covered[-1][1] == len(message.normalized_text)
        assert all(a[1] == b[0] for a, b in zip(covered, covered[1:], strict=False))
