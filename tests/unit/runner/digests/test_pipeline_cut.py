"""The map starts on the first chunks while the rest of the window is still being cut, and the
progress a person sees still carries the whole plan's total from its first report."""

from __future__ import annotations

import asyncio

from runner.core.chunks import Chunk, chunk_messages
from runner.core.contract import ChunkSummary, Digest
from runner.core.extractor import ExtractionUsage, KnownItem, MappedChunk, PipelineWarning
from runner.core.merge import merge_outputs
from runner.core.progress import JobPhase
from runner.core.window import Window, WindowMessage
from runner.digests.pipeline import PipelineHooks, run_pipeline
from tests.support.llm import make_window


class RecordingExtractor:
    """Maps every chunk to a one-line summary, noting when it was asked (in `events`)."""

    name = "recording"
    uses_known_items = True

    def __init__(self, events: list[tuple[str, int, int]]) -> None:
        self.events = events
        self.usage = ExtractionUsage()
        self.warnings: list[PipelineWarning] = []
        self.known: dict[int, int] = {}  # chunk index -> known items it was given

    async def prepare(self) -> None:
        pass

    def max_chunk_tokens(self) -> None:
        return None

    def fingerprint(self) -> str:
        return "recording"

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        self.events.append(("extract", chunk.index, 0))
        self.known[chunk.index] = len(known_items)
        await asyncio.sleep(0.001)
        return ChunkSummary.model_validate(
            {
                "chunk_summary": f"chunk {chunk.index}",
                "signal_quality": {"level": "low", "reason": "scripted"},
                "knowledge_items": [
                    {
                        "key": f"K{chunk.index}",
                        "kind": "fact",
                        "title": "message",
                        "content_pointer": {
                            "message_id": chunk.message_ids[0],
                            "char_start": 0,
                            "char_end": 7,
                        },
                        "message_ids": chunk.message_ids[:1],
                    }
                ],
            }
        )

    async def extract_fallback(self, chunk: Chunk) -> ChunkSummary | None:
        return None

    async def synthesize_digest(
        self, chunks: list[MappedChunk], window: Window, top: list[WindowMessage]
    ) -> Digest:
        digest, _ = merge_outputs([chunk.summary for chunk in chunks], window, "")
        return digest


async def test_the_first_requests_do_not_wait_for_the_whole_cut() -> None:
    window = make_window([f"message {i} " + "word " * 40 for i in range(400)])
    planned = len(chunk_messages(list(window.messages), 300))
    events: list[tuple[str, int, int]] = []

    async def on_progress(phase: JobPhase, done: int, total: int) -> None:
        events.append((phase.value, done, total))

    extractor = RecordingExtractor(events)
    result = await run_pipeline(
        window,
        extractor,
        chunk_tokens=300,
        concurrency=4,
        hooks=PipelineHooks(on_progress=on_progress),
    )
    assert result.chunk_count == planned > 20
    reports = [event for event in events if event[0] != "extract"]
    first_report = events.index(reports[0])
    # Chunks were asked for before the plan was known...
    assert first_report > 0 and events[0][0] == "extract"
    # ...but every report carries the whole plan's total, and the count done never goes back.
    assert {total for _, _, total in reports} == {planned}
    done = [count for phase, count, _ in reports if phase == JobPhase.MAP.value]
    assert done == sorted(done) and done[-1] == planned
    # Known items as at concurrency 4 whatever the timing: chunk i sees chunks 0 .. i - 4.
    assert extractor.known == {index: max(0, index - 3) for index in range(planned)}
