"""The deterministic offline extractor: the same ChunkSummary and Digest an LLM would emit,
produced by rules, with no network. It is what runs when no LLM endpoint is configured and what
`digestd demo` shows, so it aims to be a useful digest, not a placeholder.

The work is split by concept:
- offline.text: a part cut into code blocks, inline code, URLs and prose sentences (spans);
- offline.patterns: decision / action / question / tip phrasing on sentences;
- offline.threads: addressing, agreement, and the "was this question answered" rule;
- offline.artifacts, offline.versions, offline.knowledge: snippets, versions, knowledge items;
- offline.topics, offline.overview: key phrases, message centrality, the extractive overview;
- offline.chunk (map) and offline.digest + offline.merge (reduce; items are merged across chunks
  by runner.core.merge, the module the LLM stack's plain merge uses too).

Both steps are CPU-bound and pure, so they run in the CPU pool of runner/core/offload.py, off the
event loop (heartbeats, the API and cancellation keep answering; chunks use the other cores);
the results are the same wherever they run.

`known_items` is ignored on purpose (`uses_known_items = False`: the pipeline then neither waits
for earlier chunks nor puts them in the chunk cache key); the reduce step de-duplicates across
chunks instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.core.chunks import Chunk
from runner.core.contract import CONTRACT_VERSION, ChunkSummary, Digest
from runner.core.extractor import (
    ChunkFailed,
    ExtractionUsage,
    KnownItem,
    MappedChunk,
    PipelineWarning,
)
from runner.core.offload import default_processes, run_cpu
from runner.core.window import Window, WindowMessage
from runner.extract.offline.chunk import summarize_chunk
from runner.extract.offline.digest import build_digest
from runner.extract.offline.item_model import ItemModel, default_model
from runner.extract.offline.topics import RankedConversation, ranked_for, remember_ranked

# Bump whenever a rule changes what is extracted: it is part of the chunk cache key.
OFFLINE_VERSION = "3"


def offline_map_concurrency(processes: int | None = None) -> int:
    """Chunks the worker maps at once with this extractor: one per CPU-pool process
    (DIGESTD_EXTRACT_PROCESSES; None = the pool's default size). Chunks need no known items, so
    none waits for another, and the pipeline's result does not depend on which finishes first."""
    return max(1, default_processes() if processes is None else processes)


class OfflineExtractor:
    """Rule-based map and reduce (see the module docstring). No LLM calls and no I/O, so
    `usage` stays at zero and `warnings` empty."""

    name = "offline"
    uses_known_items = False  # see the module docstring: the pipeline need not wait for them

    def __init__(self, model: ItemModel | None = None) -> None:
        # The learned item decisions (offline.item_model); None: the shipped weights.
        self.model = default_model() if model is None else model
        self.usage = ExtractionUsage()
        self.warnings: list[PipelineWarning] = []

    async def prepare(self) -> None:
        """Nothing to learn: no endpoint, no request limits."""

    def max_chunk_tokens(self) -> None:
        """No request to fit: any chunk size the pipeline picks will do."""
        return None

    def fingerprint(self) -> str:
        return (
            f"offline/{OFFLINE_VERSION}/items-{self.model.fingerprint()}"
            f"/contract-{CONTRACT_VERSION}"
        )

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        try:
            return await run_cpu(summarize_chunk, chunk, self.model)
        except Exception as error:
            # The job goes on and ends PARTIAL; the reason names the error, never the content.
            raise ChunkFailed(f"offline rules failed: {type(error).__name__}") from error

    async def extract_fallback(self, chunk: Chunk) -> ChunkSummary | None:
        """No other way to read a chunk these rules failed on."""
        return None

    async def synthesize_digest(
        self,
        chunks: list[MappedChunk],
        window: Window,
        top_messages: Sequence[WindowMessage],
    ) -> Digest:
        digest, ranked = await run_cpu(_digest, chunks, window, list(top_messages), self.model)
        # The ranking comes back with the digest: the window's periods rank it too.
        remember_ranked(window, ranked)
        return digest


def _digest(
    chunks: list[MappedChunk],
    window: Window,
    top_messages: list[WindowMessage],
    model: ItemModel,
) -> tuple[Digest, list[RankedConversation] | None]:
    """`build_digest` in the CPU pool, with the window's conversation ranking it used."""
    return build_digest(chunks, window, top_messages, model), ranked_for(window)
