"""Words every pipeline stage shares: items already known, usage figures, user-facing warnings,
chunk failures and the map step's result as the reduce step receives it.

They live beside `runner.core.contract` (not in `runner.extractors`) so the LLM stack (`runner.llm`)
and the document pipeline (`runner.documents`) can use them without importing the extractors that
sit on top of both.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.core.contract import ChunkSummary
from runner.errors import DigestdError


@dataclass(frozen=True)
class KnownItem:
    """An item found in an earlier chunk, shown to later chunks so they link instead of repeat."""

    key: str
    kind: str
    title: str


@dataclass
class ExtractionUsage:
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    content_tokens: int = 0

    def add(self, other: ExtractionUsage) -> None:
        self.llm_calls += other.llm_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.content_tokens += other.content_tokens


@dataclass
class PipelineWarning:
    """A degradation or estimate worth telling the user about: a stable code and a message."""

    code: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class MappedChunk:
    """One chunk's validated summary (fresh or from the chunk cache) and the window messages the
    chunk held, in order. The ids come from the chunk itself, not from the summary: the tool
    contract's ChunkSummary does not carry them, and the reduce step needs them for coverage."""

    summary: ChunkSummary
    message_ids: tuple[str, ...]


class ChunkFailed(DigestdError):
    """The extractor gave up on one chunk; the job continues and ends PARTIAL."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ChunkTooLarge(ChunkFailed):
    """The chunk does not fit the model (its context turned out smaller than assumed);
    `fit_tokens` is the largest chunk that fits now. The pipeline re-cuts and retries."""

    def __init__(self, reason: str, fit_tokens: int) -> None:
        super().__init__(reason)
        self.fit_tokens = fit_tokens
