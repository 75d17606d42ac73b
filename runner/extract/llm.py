"""The LLM extractor: map and reduce through forced tool calls to an OpenAI-compatible endpoint.

Map: one `emit_chunk_summary` call per chunk (runner.llm.toolcall), preflighted against the map
model's budget, or one `emit_chunk_summaries` call for several consecutive chunks
(`extract_chunks`, runner.llm.pack), a chunk whose part is missing or invalid then asked alone. Reduce: `emit_digest`, in levels when needed (runner.llm.reduce). Faults become
`ChunkFailed` for a chunk, which the pipeline then has the offline extractor read instead
(`extract_fallback`; the job ends PARTIAL), or the offline reduce for the reduce; the validator
(runner.grounding.validate) checks everything afterwards, whatever produced it.

Build one extractor per job (its `usage` and `warnings` are the job's), sharing the `openai`
client and the endpoint's circuit breaker between jobs.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping

import openai

from runner.core.chunks import Chunk
from runner.core.contract import (
    CHUNK_SUMMARY_TOOL,
    CONTRACT_VERSION,
    ChunkSummary,
    ContentPointer,
    Digest,
    KnowledgeItem,
    tool_schema,
)
from runner.core.extractor import (
    ChunkFailed,
    ChunkTooLarge,
    ExtractionUsage,
    Extractor,
    KnownItem,
    MappedChunk,
    PipelineWarning,
)
from runner.core.window import Window, WindowMessage
from runner.errors import LLMError
from runner.llm import limits
from runner.llm.breaker import CircuitBreaker, config_breaker
from runner.llm.budget import (
    LimitSource,
    Preflight,
    RequestBudget,
    count_request_tokens,
    endpoint_budget,
)
from runner.llm.client import ContextLimitExceeded, ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.pack import (
    PACK_TOOL,
    PackedSummaries,
    pack_tool_schema,
    pack_user_message,
    read_parts,
)
from runner.llm.prompts import (
    MAP_PACK_PROMPT,
    MAP_PACK_PROMPT_VERSION,
    MAP_PROMPT,
    MAP_PROMPT_VERSION,
    REDUCE_PROMPT,
    REDUCE_PROMPT_VERSION,
    load_prompt,
)
from runner.llm.redaction import RedactionSession, redact_texts_off_loop
from runner.llm.reduce import FallbackReduce, TreeReducer
from runner.llm.render import map_user_message, shown_known_items, system_message
from runner.llm.toolcall import NATIVE_FALLBACK_MESSAGE, MalformedOutput, ToolCaller

logger = logging.getLogger(__name__)

# Bumped when the post-processing of map output changes (it is part of the cached result).
_MAP_POSTPROCESS_VERSION = "keys-ns-2"  # 2: known items cited by alias
# Room in a map request for the chunk's wrapper and the task line around its XML.
_MAP_WRAPPER_TOKENS = 64
# Tokens one known-item line costs at most, on average (key, kind, title up to 200 chars).
_KNOWN_ITEM_TOKENS = 24
# A refusal that names no context still proves the request was too big: assume this share of it.
_UNNAMED_OVERFLOW_SHARE = 0.75
# Reduce attempts with a budget learned from a refused reduce request.
_REDUCE_ATTEMPTS = 3


def _offline_extractor() -> Extractor | None:
    """The offline extractor, which stands in for the model where it fails (None if
    unavailable)."""
    try:
        from runner.extract.offline import OfflineExtractor
    except ImportError:
        return None
    return OfflineExtractor()


def _offline_reduce() -> FallbackReduce | None:
    """The offline extractor's reduce, used when the LLM reduce fails (None if unavailable).
    It is imported only when a reduce does fail: loading the offline rules (numpy, the link
    model) would otherwise hold up every reduce."""
    if importlib.util.find_spec("runner.extract.offline") is None:
        return None

    async def reduce(
        chunks: list[MappedChunk], window: Window, top_messages: list[WindowMessage]
    ) -> Digest:
        offline = _offline_extractor()
        if offline is None:
            raise LLMError("the offline extractor is not available")
        return await offline.synthesize_digest(chunks, window, top_messages)

    return reduce


def namespace_keys(
    summary: ChunkSummary, prefix: str, known: Mapping[str, str] | None = None
) -> ChunkSummary:
    """Knowledge-item keys made unique across chunks (`K1` → `c1a2b3c.K1`); in-chunk references
    follow, a reference to a known item by the alias it was shown under (`known`: alias → key,
    runner.llm.render) becomes its key, any other reference is kept as it is."""
    if not summary.knowledge_items:
        return summary
    local = {item.key: f"{prefix}{item.key}"[:40] for item in summary.knowledge_items}
    earlier = known or {}

    def resolved(reference: str | None) -> str | None:
        if reference is None:
            return None
        return local.get(reference) or earlier.get(reference) or reference

    def renamed(item: KnowledgeItem) -> KnowledgeItem:
        return item.model_copy(
            update={
                "key": local[item.key],
                "supersedes_id": resolved(item.supersedes_id),
                "conflicts_with_id": resolved(item.conflicts_with_id),
            }
        )

    return summary.model_copy(
        update={"knowledge_items": [renamed(item) for item in summary.knowledge_items]}
    )


def _unquoted_texts(summary: ChunkSummary, texts: Mapping[str, str]) -> list[str]:
    """The texts `quote_offsets_the_model_saw` reads, in the order it reads them."""
    pointers = [artifact.pointer for artifact in summary.artifacts] + [
        item.content_pointer for item in summary.knowledge_items if item.content_pointer
    ]
    return [
        texts[pointer.message_id]
        for pointer in pointers
        if not pointer.quote and pointer.message_id in texts
    ]


async def quote_offsets_off_loop(
    summary: ChunkSummary, texts: Mapping[str, str], redaction: RedactionSession | None
) -> ChunkSummary:
    """`quote_offsets_the_model_saw`, the same result, with the detection of personal data in
    the texts it reads off the event loop (runner.llm.redaction.redact_texts_off_loop)."""
    if redaction is None:
        return summary
    read = _unquoted_texts(summary, texts)
    redacted = dict(zip(read, await redact_texts_off_loop(read, redaction), strict=True))
    return quote_offsets_the_model_saw(summary, texts, redaction, redacted)


def quote_offsets_the_model_saw(
    summary: ChunkSummary,
    texts: Mapping[str, str],
    redaction: RedactionSession | None,
    redacted: Mapping[str, str] | None = None,
) -> ChunkSummary:
    """A pointer without a quote counts its offsets in the text the model saw. When that text
    had placeholders (runner.llm.redaction), offsets past one are shifted against the real
    text; the pointer is given the quote it meant instead (read in the redacted text, restored),
    so validation re-anchors it by that quote rather than slicing the wrong characters.
    `redacted`: text → its redaction, when already made (`quote_offsets_off_loop`)."""
    if redaction is None:
        return summary

    def meant(pointer: ContentPointer) -> ContentPointer:
        text = texts.get(pointer.message_id)
        if pointer.quote or text is None:
            return pointer
        known = redacted.get(text) if redacted is not None else None
        seen = redaction.redact(text) if known is None else known
        if seen == text or not 0 <= pointer.char_start < pointer.char_end <= len(seen):
            return pointer
        quote = redaction.restore(seen[pointer.char_start : pointer.char_end])
        return pointer.model_copy(update={"quote": quote})

    return summary.model_copy(
        update={
            "artifacts": [
                artifact.model_copy(update={"pointer": meant(artifact.pointer)})
                for artifact in summary.artifacts
            ],
            "knowledge_items": [
                item.model_copy(update={"content_pointer": meant(item.content_pointer)})
                if item.content_pointer is not None
                else item
                for item in summary.knowledge_items
            ],
        }
    )


class LLMExtractor:
    """The Extractor protocol over an OpenAI-compatible chat-completions endpoint."""

    name = "llm"
    uses_known_items = True  # each map request links to the channel's open items

    def __init__(
        self,
        config: LLMConfig,
        *,
        client: openai.AsyncOpenAI | None = None,
        breaker: CircuitBreaker | None = None,
        min_overlap: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.usage = ExtractionUsage()
        self.warnings: list[PipelineWarning] = []
        self.min_overlap = min_overlap
        self._owns_client = client is None
        self.client = client or build_client(config)
        self.breaker = breaker or config_breaker(config)
        self.caller = ResilientCaller(self.client, config, self.breaker, sleep=sleep, rng=rng)
        self.tools = ToolCaller(
            self.caller,
            self.usage,
            temperature=config.temperature,
            max_tokens_param=config.max_tokens_param,
        )
        # Server tokens per cl100k_base token of a map request that did not fit by the server's
        # own count (1.0 until one did not): how much smaller chunks must be cut.
        self.server_token_ratio = 1.0
        self.map_prompt = load_prompt(MAP_PROMPT, MAP_PROMPT_VERSION)
        self.pack_prompt = load_prompt(MAP_PACK_PROMPT, MAP_PACK_PROMPT_VERSION)
        self.reduce_prompt = load_prompt(REDUCE_PROMPT, REDUCE_PROMPT_VERSION)
        # The window's words, when the pipeline found them for the window being reduced.
        self._window_words: tuple[Window, asyncio.Future[set[str]]] | None = None
        self._note_limits()

    @property
    def map_budget(self) -> RequestBudget:
        config = self.config
        return self._budget(
            config.map_model,
            config.map_max_output_tokens,
            config.map_context_tokens,
            config.map_output_tokens,
        )

    def pack_budget(self, count: int) -> RequestBudget:
        """The budget of a map request carrying `count` chunks: each chunk's output room."""
        config = self.config
        return self._budget(
            config.map_model,
            count * config.map_max_output_tokens,
            config.map_context_tokens,
            config.map_output_tokens,
        )

    @property
    def reduce_budget(self) -> RequestBudget:
        config = self.config
        return self._budget(
            config.reduce_model,
            config.reduce_max_output_tokens,
            config.reduce_context_tokens,
            config.reduce_output_tokens,
        )

    def _budget(
        self, model: str, wanted_output: int, context: int | None, output: int | None
    ) -> RequestBudget:
        return endpoint_budget(
            self.config,
            model,
            wanted_output_tokens=wanted_output,
            context_tokens=context,
            output_tokens=output,
        )

    def _note_limits(self) -> None:
        """LIMITS_DEFAULTED for every limit that was assumed or learned from the endpoint,
        naming the setting that would make it certain (replacing an earlier note)."""
        notes: dict[str, list[str]] = {}
        for kind, budget in (("MAP", self.map_budget), ("REDUCE", self.reduce_budget)):
            if not budget.defaulted:
                continue
            context = budget.limits.context_window
            if budget.source is LimitSource.ASSUMED:
                text = (
                    f"no known limits for model {budget.model!r}: assumed a context of "
                    f"{context} tokens and {budget.max_output_tokens} output tokens"
                )
            else:
                text = (
                    f"model {budget.model!r}: a context of {context} tokens learned from the "
                    f"endpoint ({budget.learned_from}); requests were sized to fit it"
                )
            setting = f"DIGEST_{kind}_CONTEXT_TOKENS"
            notes.setdefault(text, []).append(
                setting if budget.source is LimitSource.ASSUMED else f"{setting}={context}"
            )
        self.warnings[:] = [w for w in self.warnings if w.code != "LIMITS_DEFAULTED"]
        for text, settings in notes.items():
            goal = "size requests from the first one" if "=" in settings[0] else "make it exact"
            self._warn("LIMITS_DEFAULTED", f"{text}; set {' and '.join(settings)} to {goal}")

    async def prepare(self) -> None:
        """Before the first chunk: ask the endpoint for the context of each model whose
        context is not set (runner.llm.limits.discover; at most once per process)."""
        for budget, setting in (
            (self.map_budget, self.config.map_context_tokens),
            (self.reduce_budget, self.config.reduce_context_tokens),
        ):
            if setting is None:
                await limits.discover(
                    self.client,
                    self.config.endpoint,
                    budget.model,
                    upper_bound=budget.limits.context_window,
                )
        self._note_limits()

    def _learn(self, error: ContextLimitExceeded, budget: RequestBudget) -> None:
        """Remember the context a refused request revealed (or, when it named none, a
        context smaller than what was asked for)."""
        context = limits.context_from_overflow(error.overflow, error.sent_tokens)
        if context is None:
            asked = (error.sent_tokens or budget.input_tokens) + budget.max_output_tokens
            context = int(min(asked, budget.limits.context_window) * _UNNAMED_OVERFLOW_SHARE)
        limits.learn(self.config.endpoint, budget.model, context, limits.REFUSAL)
        self._note_limits()

    def _warn(self, code: str, message: str) -> None:
        warning = PipelineWarning(code, message[:1000])
        if warning not in self.warnings:
            self.warnings.append(warning)

    def _note_estimates(self) -> None:
        if self.tools.bounds_dropped:
            self._warn(
                "SCHEMA_BOUNDS_OMITTED",
                "the endpoint could not build a grammar from the tool schema; its length and "
                "count bounds were left out of the requests (the answers are still checked "
                "against them); set DIGEST_LLM_SCHEMA_BOUNDS=omit to skip the refused request",
            )
        if self.tools.count_estimated:
            self._warn(
                "TOKEN_COUNT_ESTIMATE_USED", "preflight counted tokens with a chars/4 estimate"
            )
        if self.tools.native_fallback:
            self._warn("TOKEN_COUNT_ESTIMATE_USED", NATIVE_FALLBACK_MESSAGE)
        if self.tools.usage_estimated:
            self._warn(
                "TOKEN_COUNT_ESTIMATE_USED",
                "the endpoint reported no token usage; counted locally",
            )

    def fingerprint(self) -> str:
        """Prompt version, map model and a hash of everything else that shapes a chunk's result.
        The reduce model is left out: it does not change map output, so switching it keeps the
        chunk cache."""
        material: dict[str, object] = {
            "prompt": self.map_prompt.sha256,
            "tool": hashlib.sha256(
                json.dumps(tool_schema(CHUNK_SUMMARY_TOOL), sort_keys=True).encode()
            ).hexdigest(),
            "contract": CONTRACT_VERSION,
            "temperature": self.config.temperature,
            "max_output_tokens": self.map_budget.max_output_tokens,
            "max_known_items": self.config.max_known_items,
            "postprocess": _MAP_POSTPROCESS_VERSION,
        }
        # A chunk may be answered by a packed request (the setting, not what the budget allows
        # now: a limit learned mid-job must not change the keys of the chunks already cached).
        if self.config.chunks_per_request > 1:
            material["pack"] = {
                "prompt": self.pack_prompt.sha256,
                "tool": hashlib.sha256(
                    json.dumps(pack_tool_schema(), sort_keys=True).encode()
                ).hexdigest(),
            }
        digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
        return f"llm:{MAP_PROMPT_VERSION}:{self.config.map_model}:{digest[:16]}"

    def static_prefix_tokens(self) -> int:
        """Tokens of what every map request starts with: system prompt and tool schema."""
        tokens, _ = count_request_tokens(
            [system_message(self.map_prompt.text)], [tool_schema(CHUNK_SUMMARY_TOOL)]
        )
        return tokens

    def chunks_per_request(self) -> int:
        """How many consecutive chunks one map request carries: the setting, fewer when the map
        model's output limit cannot give each of them the output room one chunk has alone."""
        count = self.config.chunks_per_request
        alone = self.map_budget.max_output_tokens
        while count > 1 and self.pack_budget(count).max_output_tokens < count * alone:
            count -= 1
        return count

    def pack_tokens(self) -> int:
        """The most chunk tokens (runner.core.chunks count) a packed map request can carry with a
        full list of known items; the pipeline packs consecutive chunks up to this."""
        count = self.chunks_per_request()
        prefix, _ = count_request_tokens(
            [system_message(self.pack_prompt.text)], [pack_tool_schema()]
        )
        room = (
            int(self.pack_budget(count).input_tokens / self.server_token_ratio)
            - prefix
            - count * _MAP_WRAPPER_TOKENS
            - self.config.max_known_items * _KNOWN_ITEM_TOKENS
        )
        return max(1, room)

    def max_chunk_tokens(self) -> int:
        """The largest chunk (runner.core.chunks token count) a map request can carry with a full
        list of known items; the pipeline should chunk at most this big."""
        # Chunks are cut by cl100k_base tokens; a server that counts more of its own for the
        # same text (runner.llm.native_tokens) has a budget worth that many fewer of ours.
        room = (
            int(self.map_budget.input_tokens / self.server_token_ratio)
            - self.static_prefix_tokens()
            - _MAP_WRAPPER_TOKENS
            - self.config.max_known_items * _KNOWN_ITEM_TOKENS
        )
        return max(1, room)

    async def _fit_known_items(
        self,
        known_items: list[KnownItem],
        budget: RequestBudget,
        tools: list[dict[str, object]],
        build: Callable[[int], list[dict[str, object]]],
    ) -> tuple[list[dict[str, object]], dict[str, str] | None, Preflight]:
        """The request `build` makes for a limit of known items, with the limit halved until it
        fits (down to none), counted as the tool call's preflight counts it (by the server's own
        tokenizer when it has one); with the known items it shows (alias → key), or None when
        it does not fit even without any, and the last count."""
        limit = self.config.max_known_items
        while True:
            messages = build(limit)
            checked = await self.tools.count(budget.model, messages, tools, budget.input_tokens)
            if checked.fits:
                shown = shown_known_items(known_items, limit)
                return messages, {alias: item.key for alias, item in shown.items()}, checked
            if limit > 0 and known_items:
                limit //= 2
                continue
            return messages, None, checked

    async def _map_messages(
        self, chunk: Chunk, known_items: list[KnownItem], budget: RequestBudget
    ) -> tuple[list[dict[str, object]], dict[str, str]]:
        """The map request, with fewer known items if that is what it takes to fit, and the
        known items it shows (alias → key)."""
        tools = [tool_schema(CHUNK_SUMMARY_TOOL)]
        messages, shown, checked = await self._fit_known_items(
            known_items,
            budget,
            tools,
            lambda limit: [
                system_message(self.map_prompt.text),
                map_user_message(chunk, known_items, limit),
            ],
        )
        if shown is not None:
            return messages, shown
        if self.tools.native_counted:
            ours, _ = count_request_tokens(messages, tools)
            if ours and checked.tokens > ours:
                self.server_token_ratio = max(self.server_token_ratio, checked.tokens / ours)
        raise ChunkTooLarge(
            f"chunk {chunk.index} needs {checked.tokens} prompt tokens, over the budget of "
            f"{budget.input_tokens} for {budget.model}; chunk at most "
            f"{self.max_chunk_tokens()} tokens",
            self.max_chunk_tokens(),
        )

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        """Map one chunk; raises ChunkFailed with a reason (never containing the API key), or
        ChunkTooLarge when the model's context turned out too small for it."""
        budget = self.map_budget
        try:
            messages, shown = await self._map_messages(chunk, known_items, budget)
        except ChunkTooLarge:
            self._note_estimates()
            raise
        try:
            summary = await self.tools.call(
                model=budget.model,
                messages=messages,
                tool_name=CHUNK_SUMMARY_TOOL,
                model_type=ChunkSummary,
                max_output_tokens=budget.max_output_tokens,
                input_budget=budget.input_tokens,
            )
        except ContextLimitExceeded as error:
            self._learn(error, budget)
            raise ChunkTooLarge(
                f"{error}; the chunk is re-cut to at most {self.max_chunk_tokens()} tokens",
                self.max_chunk_tokens(),
            ) from None
        except MalformedOutput as error:
            raise ChunkFailed(f"{error.reason} (after one re-ask)") from None
        except LLMError as error:  # the call failed, the breaker refused it, or too large
            raise ChunkFailed(str(error)) from None
        finally:
            self._note_estimates()
        return await self._mapped(chunk, summary, shown)

    async def _mapped(
        self, chunk: Chunk, summary: ChunkSummary, shown: dict[str, str]
    ) -> ChunkSummary:
        """A chunk's summary as the model gave it, made ready for validation: pointers against
        the text the model saw, keys namespaced by the chunk."""
        self.usage.content_tokens += chunk.token_count
        texts = {part.message.message_id: part.message.normalized_text for part in chunk.parts}
        summary = await quote_offsets_off_loop(summary, texts, self.tools.caller.redaction())
        return namespace_keys(summary, f"c{chunk.content_hash[:6]}.", shown)

    async def _alone(
        self, chunks: list[Chunk], known_items: list[KnownItem]
    ) -> list[ChunkSummary | ChunkFailed]:
        """Each chunk in a request of its own, its failure returned rather than raised."""
        outcomes: list[ChunkSummary | ChunkFailed] = []
        for chunk in chunks:
            try:
                outcomes.append(await self.extract_chunk(chunk, known_items))
            except ChunkFailed as failure:
                outcomes.append(failure)
        return outcomes

    async def _pack_messages(
        self, chunks: list[Chunk], known_items: list[KnownItem], budget: RequestBudget
    ) -> tuple[list[dict[str, object]], dict[str, str]] | None:
        """The packed request, with fewer known items if that is what it takes to fit, and the
        known items it shows (alias → key); None when the chunks do not fit together."""
        messages, shown, _ = await self._fit_known_items(
            known_items,
            budget,
            [pack_tool_schema()],
            lambda limit: [
                system_message(self.pack_prompt.text),
                pack_user_message(chunks, known_items, limit),
            ],
        )
        return None if shown is None else (messages, shown)

    async def extract_chunks(
        self, chunks: list[Chunk], known_items: list[KnownItem]
    ) -> list[ChunkSummary | ChunkFailed]:
        """Map consecutive chunks in one request (`emit_chunk_summaries`), each given the same
        known items; one outcome per chunk, in order, as `extract_chunk` would have it: the
        summary, or the ChunkFailed (ChunkTooLarge) it would raise. A chunk whose part is
        missing or invalid is asked for alone; so is every chunk when the pack does not fit,
        the endpoint refused it for size, or its answer was unusable twice. A call that failed
        (after its retries, or the breaker open) fails each chunk with its reason, as it would
        have failed each alone."""
        if len(chunks) < 2:
            return await self._alone(chunks, known_items)
        budget = self.pack_budget(len(chunks))
        built = await self._pack_messages(chunks, known_items, budget)
        if built is None:
            self._note_estimates()
            return await self._alone(chunks, known_items)
        messages, shown = built
        try:
            packed = await self.tools.call(
                model=budget.model,
                messages=messages,
                tool_name=PACK_TOOL,
                model_type=PackedSummaries,
                max_output_tokens=budget.max_output_tokens,
                input_budget=budget.input_tokens,
                tool=pack_tool_schema(),
            )
        except ContextLimitExceeded as error:
            self._learn(error, budget)
            return await self._alone(chunks, known_items)
        except MalformedOutput:
            return await self._alone(chunks, known_items)
        except LLMError as error:
            return [ChunkFailed(str(error)) for _ in chunks]
        finally:
            self._note_estimates()
        parts = read_parts(packed, chunks)
        outcomes: list[ChunkSummary | ChunkFailed] = []
        for chunk in chunks:
            part = parts[chunk.index]
            if isinstance(part, ChunkSummary):
                outcomes.append(await self._mapped(chunk, part, shown))
            else:
                logger.info("chunk %d of a packed map request: %s", chunk.index, part[:300])
                outcomes.extend(await self._alone([chunk], known_items))
        return outcomes

    async def extract_fallback(self, chunk: Chunk) -> ChunkSummary | None:
        """A chunk the model could not extract, read by the offline rules instead (None when
        they are not available); its knowledge-item keys namespaced like the model's, so they
        stay unique across chunks. Raises ChunkFailed when the rules fail too."""
        offline = _offline_extractor()
        if offline is None:
            return None
        summary = await offline.extract_chunk(chunk, [])
        return namespace_keys(summary, f"o{chunk.content_hash[:6]}.")

    def use_window_words(self, window: Window, words: asyncio.Future[set[str]]) -> None:
        """The window's words (`words_of_window`), for the reduce of `window` to check partial
        digests against (runner.core.extractor.WindowWordsExtractor)."""
        self._window_words = (window, words)

    async def synthesize_digest(
        self, chunks: list[MappedChunk], window: Window, top_messages: list[WindowMessage]
    ) -> Digest:
        """Reduce the validated chunk summaries; never raises for a provider fault (a failed
        reduce falls back to a deterministic merge, with a warning)."""
        for attempt in range(_REDUCE_ATTEMPTS):
            budget = self.reduce_budget
            reducer = TreeReducer(
                self.tools,
                budget,
                self.reduce_prompt.text,
                window,
                max_levels=self.config.max_reduce_levels,
                min_overlap=self.min_overlap,
                warn=self._warn,
                fallback=_offline_reduce(),
                # A refusal for size re-plans the reduce with the context it revealed.
                raise_overflow=attempt < _REDUCE_ATTEMPTS - 1,
                window_words=(
                    self._window_words[1]
                    if self._window_words is not None and self._window_words[0] is window
                    else None
                ),
            )
            try:
                return await reducer.reduce(chunks, top_messages)
            except ContextLimitExceeded as error:
                self._learn(error, budget)
            finally:
                self._note_estimates()
        raise AssertionError("unreachable")  # pragma: no cover

    async def aclose(self) -> None:
        """Close the HTTP client if this extractor created it."""
        if self._owns_client:
            await self.client.close()


__all__ = ["LLMConfig", "LLMExtractor", "build_client", "namespace_keys"]
