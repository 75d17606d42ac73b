"""The LLM summary of a document too large for one request: every part of it is summarized
(map), the parts' summaries are merged by the chat path's reduce (`runner.llm.reduce`), and the
result is checked like a one-request summary.

Passages are the document's evidence chunks (`runner.documents.evidence_chunks`: at most 500
characters, never across a page), shown as `<passage id="p12" locator="page:3:char:0-410">` and
cited by id the way a channel digest cites message ids: to the reduce and the validator the
document is a window whose messages are its passages. Consecutive passages are packed into
parts that fit both the model's input budget and `max_chars` (DIGESTD_DOC_LLM_EXCERPT_CHARS), so
every character of the document is read by exactly one map request.

Map: one forced `emit_chunk_summary` per part (prompt doc_map.v1.md, the research question first),
at most `concurrency` at once (DIGEST_LLM_CONCURRENCY), each output validated against its own
passages (`runner.grounding.validate`) before the reduce sees it; the job's progress shows the
parts done of all. A part the model fails on (errors after the retries, an open circuit
breaker, unusable output twice, a request too large) is summarized by the offline summarizer
(`offline_summary` over that part's text): its verbatim sentences become the part's summary and
cited facts, and the digest is PARTIAL with a CHUNKS_EXTRACTED_OFFLINE warning naming the parts
and why, worded like a channel digest's (`runner.core.fallback`). Every part failing is the
model failing: `SummarizerError`, and the job falls back to the offline digest as for one
request.

Reduce: `TreeReducer` with prompt doc_reduce.v1.md and the question as its preamble (levels when
the summaries do not fit one request, a deterministic merge when a call fails; each step a
warning of the digest).

Check: the digest is validated against the passages; an overview or highlight sentence its
cited passages do not support is dropped (`unsupported_summary_sentence`,
`unsupported_key_point`, which the citation audit counts). The overview becomes the summary,
the highlights and then the knowledge items the key points, and those pass the same support
check as a one-request summary's key points. A digest without an overview (a reduce merged
deterministically after its calls failed) takes its first key points as the summary; one with
neither is a `SummarizerError` (the offline digest stands in).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from runner.core.contract import (
    CHUNK_SUMMARY_TOOL,
    ChunkSummary,
    Digest,
    KnowledgeItem,
    KnowledgeKind,
    SignalLevel,
    SignalQuality,
    tool_schema,
)
from runner.core.fallback import offline_warning
from runner.core.tokens import count_tokens
from runner.core.vocabulary import ExtractionUsage, MappedChunk, PipelineWarning
from runner.core.window import Window, WindowMessage
from runner.documents.errors import DocumentError
from runner.documents.evidence_chunks import EvidenceChunk
from runner.documents.locators import make_locator
from runner.documents.summarize import (
    KEY_POINT_MAX_CHARS,
    SummaryRequest,
    fit_text,
    offline_summary,
)
from runner.errors import LLMError
from runner.grounding.validate import validate_output
from runner.llm.budget import RequestBudget, count_request_tokens
from runner.llm.prompts import DOC_MAP_PROMPT, DOC_REDUCE_PROMPT, load_prompt
from runner.llm.reduce import TreeReducer
from runner.llm.render import system_message
from runner.llm.toolcall import MalformedOutput, ModelCall, RequestTooLarge

logger = logging.getLogger(__name__)

PROMPT_FILE_VERSION = "v1"
# What one part's summary and the digest may take: the chat path's map default, and the same
# for the reduce (a document digest keeps a summary and up to 8 key points of it).
MAP_OUTPUT_TOKENS = 4096
REDUCE_OUTPUT_TOKENS = 4096
# The token counts of passages are summed; the request's own count may differ by a little.
_PACKING_MARGIN = 0.95
_CHUNK_SUMMARY_MAX = 1200
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CHUNKS_OFFLINE = "CHUNKS_EXTRACTED_OFFLINE"

Failure = tuple[int, str]  # (part number, why the model failed on it)


@dataclass(frozen=True)
class Part:
    number: int  # 1-based, as the warnings name it
    chunks: tuple[EvidenceChunk, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(passage_id(chunk) for chunk in self.chunks)


@dataclass(frozen=True)
class MapReduceResult:
    summary: str
    key_points: list[str]
    warnings: list[PipelineWarning]
    sources: list[str]  # every passage's text: what the key points are checked against
    parts: int
    failed: list[Failure]


def passage_id(chunk: EvidenceChunk) -> str:
    return f"p{chunk.index}"


def preamble(request: SummaryRequest) -> str:
    """The research question and title, escaped: the first lines of every request."""
    question = request.query.strip() or "(none: summarize the document)"
    title = f"Document title: {escape(request.title)}\n" if request.title else ""
    return f"Research question: {escape(question)}\n{title}"


def render_passage(request: SummaryRequest, chunk: EvidenceChunk) -> str:
    locator = make_locator(
        request.canonical_text, chunk.start, chunk.end, chunk.text, chunk.page, request.page_spans
    )
    return (
        f"<passage id={quoteattr(passage_id(chunk))} locator={quoteattr(locator)}>"
        f"{escape(chunk.text)}</passage>"
    )


def map_messages(
    request: SummaryRequest, passages: list[str], number: int, total: int
) -> list[dict[str, Any]]:
    system = load_prompt(DOC_MAP_PROMPT, PROMPT_FILE_VERSION).text
    user = (
        preamble(request)
        + f'<chunk index="{number}" of="{total}" passages="{len(passages)}">\n'
        + "\n".join(passages)
        + "\n</chunk>\nCall emit_chunk_summary for this chunk."
    )
    return [system_message(system), {"role": "user", "content": user}]


def plan_parts(request: SummaryRequest, budget: RequestBudget, max_chars: int) -> list[Part]:
    """Consecutive passages packed into parts that fit `budget`'s input and `max_chars`."""
    fixed, _ = count_request_tokens(
        map_messages(request, [], 9999, 9999), [tool_schema(CHUNK_SUMMARY_TOOL)]
    )
    capacity = int((budget.input_tokens - fixed) * _PACKING_MARGIN)
    if capacity <= 0:
        raise SummarizerFailed(
            "request_too_large",
            f"a map request needs {fixed} tokens before any passage, the budget of "
            f"{budget.model} is {budget.input_tokens}",
        )
    parts: list[list[EvidenceChunk]] = [[]]
    tokens = chars = 0
    for chunk in request.chunks:
        size = count_tokens(render_passage(request, chunk) + "\n").tokens
        if parts[-1] and (tokens + size > capacity or chars + len(chunk.text) > max_chars):
            parts.append([])
            tokens = chars = 0
        parts[-1].append(chunk)  # a passage too large alone still gets its request (and fails)
        tokens += size
        chars += len(chunk.text)
    return [Part(number, tuple(chunks)) for number, chunks in enumerate(parts, 1) if chunks]


def part_ranges(numbers: list[int]) -> str:
    """`1-3, 5` for parts 1, 2, 3 and 5."""
    ranges: list[list[int]] = []
    for number in sorted(numbers):
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def offline_warning_of(failed: list[Failure], total: int) -> PipelineWarning:
    """CHUNKS_EXTRACTED_OFFLINE naming every part the offline summarizer read, then why, parts
    with the same reason together (a channel digest's wording)."""
    by_reason: dict[str, list[int]] = {}
    for number, reason in failed:
        by_reason.setdefault(reason, []).append(number)
    count = len(failed)
    noun = "chunk" if count == 1 else "chunks"
    return offline_warning(
        CHUNKS_OFFLINE,
        f"{count} of {total} {noun} of the document summarized by the offline rules "
        f"({part_ranges([number for number, _ in failed])})",
        [
            (f"{'chunk' if len(numbers) == 1 else 'chunks'} {part_ranges(numbers)}", reason)
            for reason, numbers in by_reason.items()
        ],
    )


def offline_part_summary(request: SummaryRequest, part: Part) -> ChunkSummary:
    """The offline summarizer's summary of one part, as the map contract's: its summary
    sentences, and its key points as facts citing the passages they were copied from."""
    start, end = part.chunks[0].start, part.chunks[-1].end
    text = request.canonical_text[start:end]
    chunks = [
        replace(chunk, start=chunk.start - start, end=chunk.end - start) for chunk in part.chunks
    ]
    sub = replace(
        request,
        canonical_text=text,
        page_spans=None,
        chunks=chunks,
        evidence=[],
        max_key_points=8,
        key_points_budget=2500,
        progress=None,
    )
    result = offline_summary(sub)
    items = []
    for number, point in enumerate(result.key_points, 1):
        at = text.find(point)
        cited = [
            passage_id(chunk)
            for chunk in chunks
            if at >= 0 and chunk.start < at + len(point) and at < chunk.end
        ] or [passage_id(chunks[0])]
        items.append(
            KnowledgeItem(
                key=f"o{part.number}.K{number}",
                kind=KnowledgeKind.FACT,
                title=fit_text(point, 200),
                content=point,
                message_ids=cited[:20],
            )
        )
    return ChunkSummary(
        chunk_summary=fit_text(result.summary, _CHUNK_SUMMARY_MAX),
        signal_quality=SignalQuality(
            level=SignalLevel.MEDIUM if items else SignalLevel.LOW,
            reason="summarized by the offline rules",
        ),
        knowledge_items=items,
    )


def _namespaced(summary: ChunkSummary, number: int) -> ChunkSummary:
    """Knowledge-item keys unique across parts (`K1` of part 3 → `c3.K1`)."""
    local = {item.key: f"c{number}.{item.key}"[:40] for item in summary.knowledge_items}
    items = [
        item.model_copy(
            update={
                "key": local[item.key],
                "supersedes_id": local.get(item.supersedes_id or "", item.supersedes_id),
                "conflicts_with_id": local.get(
                    item.conflicts_with_id or "", item.conflicts_with_id
                ),
            }
        )
        for item in summary.knowledge_items
    ]
    return summary.model_copy(update={"knowledge_items": items})


class DocumentMapReduce:
    """One document's map and reduce over `call`'s endpoint and model (see the module
    docstring). Build one per summary: it holds that summary's usage and warnings."""

    def __init__(
        self,
        call: ModelCall,
        request: SummaryRequest,
        *,
        max_chars: int,
        min_support: float,
        usage: ExtractionUsage,
    ) -> None:
        self.call = call
        self.request = request
        self.max_chars = max_chars
        self.min_support = min_support
        self.usage = usage
        self.tools = call.tools(usage)
        self.warnings: list[PipelineWarning] = []
        self.too_large = 0  # parts refused before sending: over the model's budget
        texts = [chunk.text for chunk in request.chunks]
        self.texts = {passage_id(c): t for c, t in zip(request.chunks, texts, strict=True)}
        self.window = Window(
            channel_name=request.title or "document",
            messages=tuple(
                WindowMessage(
                    message_id=passage_id(chunk),
                    author="document",
                    ts=_EPOCH,
                    normalized_text=chunk.text,
                )
                for chunk in request.chunks
            ),
        )

    def _budget(self, output_tokens: int) -> RequestBudget:
        return replace(self.call, max_output_tokens=output_tokens).budget()

    def _warn(self, code: str, message: str) -> None:
        self.warnings.append(PipelineWarning(code, message))

    async def _progress(self, phase: str, done: int = 0, total: int = 0) -> None:
        if self.request.progress is not None:
            await self.request.progress(phase, done, total)

    async def run(self) -> MapReduceResult:
        map_budget = self._budget(MAP_OUTPUT_TOKENS)
        parts = plan_parts(self.request, map_budget, self.max_chars)
        total = len(parts)
        logger.info("document map-reduce: %d parts", total)
        await self._progress("map", 0, total)
        semaphore = asyncio.Semaphore(self.call.caller.config.concurrency)
        done = 0
        failed: list[Failure] = []

        async def one(part: Part) -> MappedChunk:
            nonlocal done
            async with semaphore:
                summary = await self._map(part, map_budget, total, failed)
            done += 1
            await self._progress("map", done, total)
            return MappedChunk(summary=summary, message_ids=part.ids)

        mapped = await asyncio.gather(*(one(part) for part in parts))
        if failed and len(failed) == total:
            reason = sorted(failed)[0][1]
            code = "request_too_large" if self.too_large == total else "map_failed"
            raise SummarizerFailed(code, f"the model failed on every part: {reason}")
        await self._progress("reduce")
        digest = await self._reduce(list(mapped))
        summary, key_points = self._checked(digest)
        warnings = list(self.warnings)
        if failed:
            warnings.insert(0, offline_warning_of(sorted(failed), total))
        return MapReduceResult(
            summary=summary,
            key_points=key_points,
            warnings=warnings,
            sources=list(self.texts.values()),
            parts=total,
            failed=sorted(failed),
        )

    async def _map(
        self, part: Part, budget: RequestBudget, total: int, failed: list[Failure]
    ) -> ChunkSummary:
        passages = [render_passage(self.request, chunk) for chunk in part.chunks]
        messages = map_messages(self.request, passages, part.number, total)
        try:
            summary = await self.tools.call(
                model=budget.model,
                messages=messages,
                tool_name=CHUNK_SUMMARY_TOOL,
                model_type=ChunkSummary,
                max_output_tokens=budget.max_output_tokens,
                input_budget=budget.input_tokens,
            )
        except MalformedOutput as error:
            failed.append((part.number, f"{error.reason} (after one re-ask)"))
            return offline_part_summary(self.request, part)
        except LLMError as error:  # the call failed, the breaker refused it, too large
            self.too_large += isinstance(error, RequestTooLarge)
            failed.append((part.number, str(error)))
            return offline_part_summary(self.request, part)
        own = {passage: self.texts[passage] for passage in part.ids}
        checked = validate_output(
            _namespaced(summary, part.number),
            own,
            min_overlap=self.min_support,
            channel_name=self.window.channel_name,
        )
        if checked.rejections:
            logger.info("part %d: %d items rejected", part.number, len(checked.rejections))
        return checked.output

    async def _reduce(self, mapped: list[MappedChunk]) -> Digest:
        reducer = TreeReducer(
            self.tools,
            self._budget(REDUCE_OUTPUT_TOKENS),
            load_prompt(DOC_REDUCE_PROMPT, PROMPT_FILE_VERSION).text,
            self.window,
            max_levels=self.call.caller.config.max_reduce_levels,
            min_overlap=self.min_support,
            warn=self._warn,
            preamble=preamble(self.request),
        )
        return await reducer.reduce(mapped, [])

    def _checked(self, digest: Digest) -> tuple[str, list[str]]:
        """The digest validated against the passages, as a summary and key points."""
        checked = validate_output(
            digest, self.texts, min_overlap=self.min_support, channel_name=self.window.channel_name
        )
        for rejection in checked.rejections:
            if rejection.field == "overview":
                self._warn(
                    "unsupported_summary_sentence",
                    f"a summary sentence was dropped ({rejection.reason.split(':')[0]})",
                )
            elif rejection.field == "highlights":
                self._warn(
                    "unsupported_key_point",
                    f"a key point was dropped ({rejection.reason.split(':')[0]})",
                )
        output = checked.output
        points: list[str] = [sentence.sentence.strip() for sentence in output.highlights]
        for item in output.knowledge_items:
            text = item.content or (item.content_pointer.quote if item.content_pointer else None)
            if text:
                points.append(fit_text(" ".join(text.split()), KEY_POINT_MAX_CHARS))
        unique = list(dict.fromkeys(point for point in points if point))
        # A reduce merged without the model (its calls failed) may have no overview: the
        # validated statements of the parts stand in, so the map's work is not lost.
        sentences = [sentence.sentence.strip() for sentence in output.overview] or unique[:3]
        if not sentences:
            raise SummarizerFailed(
                "no_summary", "the merged digest has no summary sentence its passages support"
            )
        kept: list[str] = []
        for sentence in sentences:  # whole sentences, most important first, within the budget
            if len(" ".join([*kept, sentence])) <= self.request.summary_budget:
                kept.append(sentence)
        summary = " ".join(kept) or fit_text(sentences[0], self.request.summary_budget)
        return summary, unique


class SummarizerFailed(DocumentError, LLMError):
    """The map-reduce gave no usable summary (`llm_summary.SummarizerError` re-raises it as
    one); the job falls back to the offline digest."""
