"""The reduce step: chunk summaries → one Digest through `emit_digest`, in levels if needed.

When every summary fits the reduce model's budget, one call merges them. Otherwise the
degradation order applies, each step recorded as a warning:
1. tree reduce: consecutive summaries are packed into groups that fit, each group is merged into
   a partial digest (validated against the window before it goes further), and the partial
   digests are reduced again, up to `max_levels` levels;
2. shorter summaries: free text is trimmed, pointers, ids and URLs kept (CONTENT_TRUNCATED);
3. dropping the lowest-signal summaries, latest first among equals (CONTENT_DROPPED).
A call that fails is replaced by the deterministic merge (SUMMARY_PROVIDER_FAILED), so nothing
already validated is lost. Empty-signal summaries have no items and are not sent at all.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from runner.core.contract import DIGEST_TOOL, ChunkSummary, Digest, SignalLevel, tool_schema
from runner.core.merge import SIGNAL_RANK, merge_outputs
from runner.core.offload import run_light
from runner.core.tokens import count_tokens
from runner.core.vocabulary import MappedChunk
from runner.core.window import Window, WindowMessage
from runner.errors import LLMError
from runner.grounding.validate import validate_output, words_of_window
from runner.llm.budget import RequestBudget, count_request_tokens
from runner.llm.client import ContextLimitExceeded
from runner.llm.render import (
    reduce_user_message,
    render_summary,
    render_top_messages,
    summary_payload,
    system_message,
)
from runner.llm.toolcall import ToolCaller

logger = logging.getLogger(__name__)

# Top messages are a hint for the final call; they may take at most this share of its budget.
TOP_MESSAGES_SHARE = 0.15

Warn = Callable[[str, str], None]
# A deterministic reduce over validated summaries (the offline extractor's synthesize_digest).
FallbackReduce = Callable[[list[MappedChunk], Window, list[WindowMessage]], Awaitable[Digest]]


@dataclass
class ReduceInput:
    """One summary or partial digest on its way into a reduce call."""

    output: ChunkSummary | Digest
    first: int  # 1-based positions of the chunk summaries it covers
    last: int
    short: bool = False
    _tokens: int | None = None

    @property
    def label(self) -> str:
        return (
            f"chunk {self.first}" if self.first == self.last else f"chunks {self.first}-{self.last}"
        )

    def render(self, position: int) -> str:
        return render_summary(position, self.label, summary_payload(self.output, short=self.short))

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            # Position digits change a token or two; 9999 stands for any position.
            self._tokens = count_tokens(self.render(9999) + "\n").tokens
        return self._tokens

    def shortened(self) -> ReduceInput:
        return ReduceInput(self.output, self.first, self.last, short=True)

    @property
    def rank(self) -> int:
        return SIGNAL_RANK[self.output.signal_quality.level]


class TreeReducer:
    def __init__(
        self,
        tools: ToolCaller,
        budget: RequestBudget,
        prompt_text: str,
        window: Window,
        *,
        max_levels: int,
        min_overlap: float,
        warn: Warn,
        fallback: FallbackReduce | None = None,
        raise_overflow: bool = False,
        preamble: str = "",
        window_words: asyncio.Future[set[str]] | None = None,
    ) -> None:
        self.tools = tools
        self.budget = budget
        self.prompt_text = prompt_text
        self.window = window
        self.max_levels = max_levels
        self.min_overlap = min_overlap
        self.warn = warn
        self.fallback = fallback
        # With `raise_overflow`, a request the endpoint refuses as too large for the model's
        # context raises ContextLimitExceeded, so the caller can re-plan with the context it
        # learned, instead of merging deterministically.
        self.raise_overflow = raise_overflow
        self.overflow: ContextLimitExceeded | None = None
        # Opens every request's user message (escaped by the caller): the task's own context,
        # such as the research question a document digest answers.
        self.preamble = preamble
        self.texts = {m.message_id: m.normalized_text for m in window.messages}
        self.notes: list[str] = []
        # The window's words, which every partial digest's title and keywords are checked
        # against (`words_of_window`): the caller's when it found them already (the pipeline
        # does while the map runs), else found once, in a thread, while the first partial
        # merges are at the model.
        self._words: asyncio.Future[set[str]] | None = window_words

    def _window_words(self) -> asyncio.Future[set[str]]:
        if self._words is None:
            self._words = asyncio.create_task(
                run_light(words_of_window, self.texts.values(), self.window.channel_name)
            )
        return self._words

    def _messages(
        self, inputs: list[ReduceInput], top: str, *, partial: bool
    ) -> list[dict[str, object]]:
        rendered = [item.render(position + 1) for position, item in enumerate(inputs)]
        note = " ".join(self.notes)
        user = reduce_user_message(
            self.window, rendered, top, note, partial=partial, preamble=self.preamble
        )
        return [system_message(self.prompt_text), user]

    def _fixed_tokens(self, top: str, *, partial: bool) -> int:
        tokens, _ = count_request_tokens(
            self._messages([], top, partial=partial), [tool_schema(DIGEST_TOOL)]
        )
        return tokens

    def _capacity(self, top: str, *, partial: bool) -> int:
        return self.budget.input_tokens - self._fixed_tokens(top, partial=partial)

    def _top_messages(self, messages: list[WindowMessage]) -> str:
        allowance = int(self.budget.input_tokens * TOP_MESSAGES_SHARE)
        kept = list(messages)
        while kept and count_tokens(render_top_messages(kept)).tokens > allowance:
            kept.pop()
        return render_top_messages(kept)

    def _fit_alone(self, inputs: list[ReduceInput], capacity: int) -> list[ReduceInput]:
        """Shorten, then drop, inputs too big for any request on their own."""
        fitted: list[ReduceInput] = []
        for item in inputs:
            if item.tokens > capacity and not item.short:
                self.warn("CONTENT_TRUNCATED", f"{item.label}: shortened to fit the reduce budget")
                item = item.shortened()
            if item.tokens > capacity:
                self.warn(
                    "CONTENT_DROPPED", f"{item.label}: too large for the reduce budget, dropped"
                )
                self.notes.append(f"{item.label} dropped (too large).")
                continue
            fitted.append(item)
        return fitted

    @staticmethod
    def _pack(inputs: list[ReduceInput], capacity: int) -> list[list[ReduceInput]]:
        """Consecutive inputs in balanced groups of at most `capacity` tokens."""
        total = sum(item.tokens for item in inputs)
        target = min(capacity, math.ceil(total / max(1, math.ceil(total / capacity)) * 1.1))
        groups: list[list[ReduceInput]] = [[]]
        used = 0
        for item in inputs:
            if groups[-1] and used + item.tokens > target:
                groups.append([])
                used = 0
            groups[-1].append(item)
            used += item.tokens
        return groups

    def _partial_output_tokens(self) -> int:
        """Output allowed to a partial merge: small enough that at least three partial digests
        fit one request of the next level, so the tree always converges."""
        capacity = self._capacity("", partial=True)
        return max(256, min(self.budget.max_output_tokens, capacity // 3))

    async def _merge_group(self, group: list[ReduceInput], level: int) -> ReduceInput:
        first, last = group[0].first, group[-1].last
        label = f"chunks {first}-{last}"
        try:
            partial = await self.tools.call(
                model=self.budget.model,
                messages=self._messages(group, "", partial=True),
                tool_name=DIGEST_TOOL,
                model_type=Digest,
                max_output_tokens=self._partial_output_tokens(),
                input_budget=self.budget.input_tokens,
            )
        except LLMError as error:
            if self.raise_overflow and isinstance(error, ContextLimitExceeded):
                self.overflow = self.overflow or error
                return ReduceInput(group[0].output, first, last)  # discarded by the caller
            self.warn(
                "SUMMARY_PROVIDER_FAILED",
                f"level {level + 1} merge of {label} failed ({error}); merged deterministically",
            )
            merged, dropped = merge_outputs([item.output for item in group], self.window, "")
            if dropped:
                self.warn("CONTENT_DROPPED", f"{label}: {dropped} items beyond the digest limits")
            return ReduceInput(merged, first, last)
        # Check the partial digest now, so nothing invented travels up the tree (off the event
        # loop: it reads the whole window).
        checked = await run_light(
            validate_output,
            partial,
            self.texts,
            min_overlap=self.min_overlap,
            channel_name=self.window.channel_name,
            window_words=await self._window_words(),
        )
        if checked.rejections:
            logger.info("partial merge of %s: %d items rejected", label, len(checked.rejections))
        return ReduceInput(checked.output, first, last)

    def _degrade_to_fit(self, inputs: list[ReduceInput], capacity: int) -> list[ReduceInput]:
        if sum(item.tokens for item in inputs) <= capacity:
            return inputs
        inputs = [item if item.short else item.shortened() for item in inputs]
        self.warn("CONTENT_TRUNCATED", "summaries shortened to fit the reduce budget")
        dropped: list[str] = []
        while len(inputs) > 1 and sum(item.tokens for item in inputs) > capacity:
            # Lowest signal first; among equals the latest (the earliest context is kept).
            victim = min(range(len(inputs)), key=lambda i: (inputs[i].rank, -i))
            dropped.append(inputs.pop(victim).label)
        if dropped:
            self.warn("CONTENT_DROPPED", f"dropped to fit the reduce budget: {', '.join(dropped)}")
            self.notes.append(f"Dropped for budget: {', '.join(dropped)}.")
        return inputs

    async def reduce(self, chunks: list[MappedChunk], top_messages: list[WindowMessage]) -> Digest:
        summaries = [chunk.summary for chunk in chunks]
        inputs = [
            ReduceInput(summary, position + 1, position + 1)
            for position, summary in enumerate(summaries)
            if summary.signal_quality.level is not SignalLevel.EMPTY
        ]
        if not inputs:
            # Nothing to merge: no call needed, and the deterministic result is exact.
            note = "every chunk summary was empty" if summaries else "no chunk produced a summary"
            digest, _ = merge_outputs(list(summaries), self.window, note)
            return digest
        top = self._top_messages(top_messages)
        final_capacity = self._capacity(top, partial=False)
        partial_capacity = self._capacity("", partial=True)
        if final_capacity <= 0 or partial_capacity <= 0:
            reason = f"the budget of {self.budget.model} cannot hold the reduce prompt"
            return await self._fallback(chunks, top_messages, reason)
        level = 0
        while sum(item.tokens for item in inputs) > final_capacity and level < self.max_levels:
            inputs = self._fit_alone(inputs, partial_capacity)
            if not inputs:
                break
            groups = self._pack(inputs, partial_capacity)
            if all(len(group) == 1 for group in groups):
                if all(item.short for item in inputs):
                    break
                self.warn(
                    "CONTENT_TRUNCATED", "summaries shortened so they can be merged in levels"
                )
                inputs = [item.shortened() for item in inputs]
                continue
            if level == 0:
                self.warn(
                    "CONTENT_TRUNCATED", f"{len(inputs)} summaries reduced in levels (tree reduce)"
                )
            self._window_words()
            merged = await asyncio.gather(
                *(self._merge_group(group, level) for group in groups if len(group) > 1)
            )
            if self.overflow is not None:
                raise self.overflow
            pending = iter(merged)
            inputs = [group[0] if len(group) == 1 else next(pending) for group in groups]
            level += 1
        inputs = self._degrade_to_fit(inputs, final_capacity)
        if not inputs:
            reason = f"no summary fits the budget of {self.budget.model}"
            return await self._fallback(chunks, top_messages, reason)
        try:
            digest = await self.tools.call(
                model=self.budget.model,
                messages=self._messages(inputs, top, partial=False),
                tool_name=DIGEST_TOOL,
                model_type=Digest,
                max_output_tokens=self.budget.max_output_tokens,
                input_budget=self.budget.input_tokens,
            )
        except LLMError as error:
            if self.raise_overflow and isinstance(error, ContextLimitExceeded):
                raise
            return await self._fallback(chunks, top_messages, str(error))
        return self._with_coverage(digest)

    async def _fallback(
        self, chunks: list[MappedChunk], top_messages: list[WindowMessage], reason: str
    ) -> Digest:
        """The digest of the original validated summaries without the LLM: the configured
        deterministic reduce, else a plain merge."""
        note = f"The reduce step failed ({reason[:300]}); items merged without the LLM."
        self.warn(
            "SUMMARY_PROVIDER_FAILED",
            f"reduce failed: {reason[:500]}; digest merged deterministically from "
            f"{len(chunks)} chunk summaries",
        )
        if self.fallback is not None:
            try:
                digest = await self.fallback(list(chunks), self.window, list(top_messages))
            except Exception:
                logger.exception("the deterministic reduce failed; using the plain merge")
            else:
                notes = f"{digest.coverage.notes} {note}".strip()[:1000]
                coverage = digest.coverage.model_copy(update={"notes": notes})
                return digest.model_copy(update={"coverage": coverage})
        digest, dropped = merge_outputs([chunk.summary for chunk in chunks], self.window, note)
        if dropped:
            self.warn(
                "CONTENT_DROPPED", f"{dropped} items beyond the digest limits in the fallback merge"
            )
        return digest

    def _with_coverage(self, digest: Digest) -> Digest:
        """Window facts the model may get wrong are set from the window itself."""
        messages = self.window.messages
        coverage = digest.coverage
        notes = " ".join([coverage.notes, *self.notes]).strip()[:1000]
        fixed = coverage.model_copy(
            update={
                "messages_total": len(messages),
                "messages_covered": min(coverage.messages_covered, len(messages)),
                "first_message_id": messages[0].message_id if messages else None,
                "last_message_id": messages[-1].message_id if messages else None,
                "notes": notes,
            }
        )
        return digest.model_copy(update={"coverage": fixed})
