"""What the pipeline needs from an extractor. The words it shares with the LLM stack and the
document pipeline (usage, warnings, known items, chunk failures) live in `runner.core.vocabulary`."""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

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
    "PackingExtractor",
    "PipelineWarning",
    "WindowWordsExtractor",
]


class Extractor(Protocol):
    name: str
    usage: ExtractionUsage
    warnings: list[PipelineWarning]
    # False when `extract_chunk` ignores its known items: the pipeline then neither reads the
    # channel's tracked items nor makes a chunk wait for the chunks before it.
    uses_known_items: bool

    async def prepare(self) -> None:
        """Before the first chunk: learn what the extractor needs to size its requests (an LLM
        extractor asks the endpoint for its models' contexts); nothing for others."""
        ...

    def max_chunk_tokens(self) -> int | None:
        """The largest chunk the extractor can take in one request, or None when it has no
        limit of its own; the pipeline chunks at most this big."""
        ...

    def fingerprint(self) -> str:
        """Everything that changes its output for the same chunk (version, model, prompt, config);
        part of the chunk cache key."""
        ...

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary: ...

    async def extract_fallback(self, chunk: Chunk) -> ChunkSummary | None:
        """A chunk `extract_chunk` gave up on (ChunkFailed), read another way (the LLM
        extractor: by the offline rules), or None when there is no other way. The pipeline
        validates it like any chunk, never caches it, and names the chunk in the job's
        warnings; it raises ChunkFailed when the other way fails too."""
        ...

    async def synthesize_digest(
        self,
        chunks: list[MappedChunk],
        window: Window,
        top_messages: list[WindowMessage],
    ) -> Digest: ...


@runtime_checkable
class PackingExtractor(Extractor, Protocol):
    """An extractor that can map several consecutive chunks in one request (the LLM extractor:
    what every request repeats is then sent once for them)."""

    def chunks_per_request(self) -> int:
        """The most chunks one request carries (1: packing is off)."""
        ...

    def pack_tokens(self) -> int:
        """The most chunk tokens one packed request carries."""
        ...

    async def extract_chunks(
        self, chunks: list[Chunk], known_items: list[KnownItem]
    ) -> list[ChunkSummary | ChunkFailed]:
        """One outcome per chunk, in order: its summary, or the ChunkFailed (ChunkTooLarge)
        `extract_chunk` would have raised for it."""
        ...


@runtime_checkable
class WindowWordsExtractor(Extractor, Protocol):
    """An extractor whose reduce checks partial digests against the whole window (the LLM
    extractor's tree reduce): the pipeline hands it the window's words, which it finds while the
    map waits on the model, so they are not found again after the map."""

    def use_window_words(self, window: Window, words: asyncio.Future[set[str]]) -> None:
        """`words`: `runner.grounding.validate.words_of_window` of `window`'s texts and channel
        name, to await when needed; for `window` only."""
        ...
