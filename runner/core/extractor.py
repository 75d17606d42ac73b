"""What the pipeline needs from an extractor. The words it shares with the LLM stack and the
document pipeline (usage, warnings, known items, chunk failures) live in `runner.core.vocabulary`."""

from __future__ import annotations

from typing import Protocol

from runner.core.chunks import Chunk
from runner.core.contract import ChunkSummary, Digest
from runner.core.vocabulary import (
    ChunkFailed,
    ChunkTooLarge,
    ExtractionUsage,
    KnownItem,
    MappedChunk,
    PipelineWarning,
)
from runner.core.window import Window, WindowMessage

# Re-exported: the Extractor protocol speaks these words, and extractors raise the chunk failures.
__all__ = [
    "ChunkFailed",
    "ChunkTooLarge",
    "ExtractionUsage",
    "Extractor",
    "KnownItem",
    "MappedChunk",
    "PipelineWarning",
]


class Extractor(Protocol):
    name: str
    usage: ExtractionUsage
    warnings: list[PipelineWarning]

    def fingerprint(self) -> str:
        """Everything that changes its output for the same chunk (version, model, prompt, config);
        part of the chunk cache key."""
        ...

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary: ...

    async def synthesize_digest(
        self,
        chunks: list[MappedChunk],
        window: Window,
        top_messages: list[WindowMessage],
    ) -> Digest: ...

