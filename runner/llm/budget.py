"""Token budgets: model limits, the effective input budget, request preflight, and the final-fit
pass over an assembled request (the fidelity levels and floors it shares with any fitting of
content to a budget live in runner.core.fidelity, pure).

Every request is counted before it is sent. Counts use tiktoken's cl100k_base (runner.core.tokens);
when the encoding is unavailable they fall back to a chars/4 estimate, which gets an extra safety
margin and is reported as TOKEN_COUNT_ESTIMATE_USED. The preflight of a tool call to a llama.cpp
or llama-cpp-python server counts with the server's own tokenizer first
(runner.llm.native_tokens), falling back to these counts.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Generic, TypeVar

from runner.core.tokens import count_tokens
from runner.llm import limits
from runner.llm.config import LLMConfig

Assembled = TypeVar("Assembled")


class BudgetingMode(str, Enum):
    INPUT_ONLY = "input_only"  # the output limit is separate from the context window
    COMBINED = "combined"  # prompt + max output tokens must fit the context window


@dataclass(frozen=True)
class ModelLimits:
    context_window: int
    max_output_tokens: int
    budgeting_mode: BudgetingMode = BudgetingMode.COMBINED


_C = BudgetingMode.COMBINED
_I = BudgetingMode.INPUT_ONLY

# Keyed by model-name prefix; the longest matching prefix wins ("gpt-4o-mini-2024-07-18" →
# "gpt-4o-mini"). Figures from the providers' model pages; override with LLMConfig.model_limits.
DEFAULT_MODEL_LIMITS: dict[str, ModelLimits] = {
    "gpt-3.5-turbo": ModelLimits(16_385, 4_096, _C),
    "gpt-4-turbo": ModelLimits(128_000, 4_096, _C),
    "gpt-4o": ModelLimits(128_000, 16_384, _C),
    "gpt-4o-mini": ModelLimits(128_000, 16_384, _C),
    "gpt-4.1": ModelLimits(1_047_576, 32_768, _C),
    "gpt-5": ModelLimits(400_000, 128_000, _C),
    "o1": ModelLimits(200_000, 100_000, _C),
    "o3": ModelLimits(200_000, 100_000, _C),
    "o4-mini": ModelLimits(200_000, 100_000, _C),
    "claude-3-haiku": ModelLimits(200_000, 4_096, _C),
    "claude-3-opus": ModelLimits(200_000, 4_096, _C),
    "claude-3-5": ModelLimits(200_000, 8_192, _C),
    "claude-3-7-sonnet": ModelLimits(200_000, 64_000, _C),
    "claude-sonnet-4": ModelLimits(200_000, 64_000, _C),
    "claude-opus-4": ModelLimits(200_000, 32_000, _C),
    "claude-haiku-4": ModelLimits(200_000, 64_000, _C),
    "gemini-1.5-pro": ModelLimits(2_097_152, 8_192, _I),
    "gemini-1.5-flash": ModelLimits(1_048_576, 8_192, _I),
    "gemini-2.0-flash": ModelLimits(1_048_576, 8_192, _I),
    "gemini-2.5": ModelLimits(1_048_576, 65_536, _I),
}

# Unknown models (local servers often run 8-32k contexts), until the endpoint tells otherwise
# (runner.llm.limits): flagged as LIMITS_DEFAULTED, naming DIGEST_MAP/REDUCE_CONTEXT_TOKENS.
FALLBACK_LIMITS = ModelLimits(32_768, 4_096, _C)

# Chat formats add a few tokens per message (role, separators) that the content does not show.
_PER_MESSAGE_TOKENS = 4
# chars/4 may undercount code and non-Latin text; an estimate gets this much extra margin.
_ESTIMATE_EXTRA_MARGIN = 0.10


def _model_key(model: str) -> str:
    name = model.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" → "gpt-4o"
    return name.split(":", 1)[0]  # "llama3.1:8b" → "llama3.1"


def get_model_limits(
    model: str, overrides: dict[str, dict[str, Any]] | None = None
) -> tuple[ModelLimits, bool]:
    """The limits of `model` and whether they are the fallback defaults.

    Resolution order: `overrides[model]` (on top of the table entry or the fallback), the
    longest table prefix of the model name, the fallback."""
    key = _model_key(model)
    matches = [prefix for prefix in DEFAULT_MODEL_LIMITS if key.startswith(prefix)]
    base = DEFAULT_MODEL_LIMITS[max(matches, key=len)] if matches else None
    override = (overrides or {}).get(model)
    if override:
        start = base or FALLBACK_LIMITS
        return (
            ModelLimits(
                context_window=int(override.get("context_window", start.context_window)),
                max_output_tokens=int(override.get("max_output_tokens", start.max_output_tokens)),
                budgeting_mode=BudgetingMode(override.get("budgeting_mode", start.budgeting_mode)),
            ),
            False,
        )
    return (base, False) if base else (FALLBACK_LIMITS, True)


class LimitSource(str, Enum):
    """Where a budget's context window comes from; the last three are worth a warning."""

    SETTING = "setting"  # DIGEST_MAP/REDUCE_CONTEXT_TOKENS
    TABLE = "table"  # the model table or an LLMConfig.model_limits override
    DISCOVERED = "discovered"  # the endpoint's model list (/v1/models, /props)
    LEARNED = "learned"  # a 400 that named the context
    ASSUMED = "assumed"  # an unknown model: FALLBACK_LIMITS

    @property
    def defaulted(self) -> bool:
        return self not in (LimitSource.SETTING, LimitSource.TABLE)


# A combined-budget request asks for at most this share of the context as output unless the
# output is set explicitly: a model with an 8,192-token context keeps room for its input.
_MAX_OUTPUT_SHARE = 4


@dataclass(frozen=True)
class RequestBudget:
    """What one kind of request (map or reduce) may send and ask for."""

    model: str
    limits: ModelLimits
    max_output_tokens: int
    input_tokens: int
    source: LimitSource = LimitSource.TABLE
    learned_from: str = ""

    @property
    def defaulted(self) -> bool:
        return self.source.defaulted

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        wanted_output_tokens: int,
        overrides: dict[str, dict[str, Any]] | None,
        runtime_overhead: int,
        safety_margin: float,
        context_tokens: int | None = None,
        output_tokens: int | None = None,
        learned_context: int | None = None,
        learned_source: LimitSource = LimitSource.LEARNED,
        learned_from: str = "",
    ) -> RequestBudget:
        """The budget of `model`. Context: the setting `context_tokens`, else what the endpoint
        taught (`learned_context`, only ever lowering), else the table, else the fallback.
        Output: the setting `output_tokens`, else the wanted output within the model's limit and
        a quarter of the context."""
        limits, defaulted = get_model_limits(model, overrides)
        source = LimitSource.ASSUMED if defaulted else LimitSource.TABLE
        if context_tokens is not None:
            limits = replace(limits, context_window=context_tokens)
            source = LimitSource.SETTING
        elif learned_context is not None and (defaulted or learned_context < limits.context_window):
            limits = replace(limits, context_window=learned_context)
            source = learned_source
        if output_tokens is not None:
            output = max(1, output_tokens)
            limits = replace(limits, max_output_tokens=output)
        else:
            output = max(1, min(wanted_output_tokens, limits.max_output_tokens))
            if limits.budgeting_mode is BudgetingMode.COMBINED:
                output = max(1, min(output, limits.context_window // _MAX_OUTPUT_SHARE))
        return cls(
            model=model,
            limits=limits,
            max_output_tokens=output,
            input_tokens=effective_budget(limits, output, runtime_overhead, safety_margin),
            source=source,
            learned_from=learned_from if source is learned_source else "",
        )


def endpoint_budget(
    config: LLMConfig,
    model: str,
    *,
    wanted_output_tokens: int,
    context_tokens: int | None,
    output_tokens: int | None,
) -> RequestBudget:
    """The budget of `model` behind `config`'s endpoint: the settings (`context_tokens`,
    `output_tokens`), else what the endpoint taught this process (runner.llm.limits), else the
    table. The chat extractor's map and reduce and the document summarizer all size by this."""
    known = limits.learned(config.endpoint, model)
    return RequestBudget.for_model(
        model,
        wanted_output_tokens=wanted_output_tokens,
        overrides=config.model_limits,
        runtime_overhead=config.runtime_overhead_tokens,
        safety_margin=config.token_safety_margin,
        context_tokens=context_tokens,
        output_tokens=output_tokens,
        learned_context=known.context_tokens if known else None,
        learned_source=(
            LimitSource.LEARNED if known and known.from_refusal else LimitSource.DISCOVERED
        ),
        learned_from=known.source if known else "",
    )


def limits_defaulted_message(budget: RequestBudget, setting: str | None) -> str:
    """The LIMITS_DEFAULTED text of a budget whose context was assumed or learned, worded as
    the chat extractor's, naming `setting` (the one that sizes this model; None: no setting
    does, so the remedy is a model the table knows)."""
    context = budget.limits.context_window
    assumed = budget.source is LimitSource.ASSUMED
    if assumed:
        text = (
            f"no known limits for model {budget.model!r}: assumed a context of {context} "
            f"tokens and {budget.max_output_tokens} output tokens"
        )
    else:
        text = (
            f"model {budget.model!r}: a context of {context} tokens learned from the endpoint "
            f"({budget.learned_from}); requests were sized to fit it"
        )
    if setting is None:
        return f"{text}; no setting sizes this model (DIGEST_REDUCE_CONTEXT_TOKENS sizes the reduce model only)"
    if assumed:
        return f"{text}; set {setting} to make it exact"
    return f"{text}; set {setting}={context} to size requests from the first one"


def effective_budget(
    limits: ModelLimits, output_tokens: int, runtime_overhead: int, safety_margin: float
) -> int:
    """(input budget − runtime overhead) × (1 − safety margin); a combined-budget model
    reserves the output tokens the request asks for."""
    if limits.budgeting_mode is BudgetingMode.COMBINED:
        input_budget = limits.context_window - output_tokens
    else:
        input_budget = limits.context_window
    return max(0, int((input_budget - runtime_overhead) * (1 - safety_margin)))


@dataclass(frozen=True)
class Preflight:
    tokens: int
    budget: int
    estimated: bool

    @property
    def fits(self) -> bool:
        limit = self.budget * (1 - _ESTIMATE_EXTRA_MARGIN) if self.estimated else self.budget
        return self.tokens <= limit


# The same pieces are counted again and again: the static prefix (system prompt, tool schema) in
# every request, and a request's own chunk in each of its preflights (bench/pipeline.py: this was
# the runner's largest CPU cost). Bounded, so unique chunk texts only pass through.
_count_piece = functools.lru_cache(maxsize=128)(count_tokens)


def request_pieces(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> tuple[int, list[str]]:
    """The tokens a chat request's format adds (per message) and the texts whose tokens are
    counted: each message's content and tool calls, and the tool schemas."""
    pieces: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        for call in message.get("tool_calls") or []:
            pieces.append(json.dumps(call, ensure_ascii=False))
    if tools:
        pieces.append(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))
    return _PER_MESSAGE_TOKENS * len(messages), pieces


def count_request_tokens(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> tuple[int, bool]:
    """Tokens of a chat request's messages and tool schemas, and whether it is an estimate."""
    total, pieces = request_pieces(messages, tools)
    estimated = False
    for piece in pieces:
        counted = _count_piece(piece)
        total += counted.tokens
        estimated = estimated or counted.estimated
    return total, estimated


def preflight(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, budget: int
) -> Preflight:
    tokens, estimated = count_request_tokens(messages, tools)
    return Preflight(tokens=tokens, budget=budget, estimated=estimated)


# The final-fit pass: after a request is assembled whole (system prompt, tool schema, messages)
# it is counted again; a request still over its limit is assembled again with the content budget
# lowered by the overshoot and this share of it, at most this many times.
FINAL_FIT_MAX_ITERATIONS = 2
FINAL_FIT_MARGIN = 0.10
_FINAL_FIT_MIN_STEP = 8  # tokens: an overshoot of one token still moves the budget


@dataclass(frozen=True)
class FinalFit(Generic[Assembled]):
    """The last assembled request, its count, its limit and how many re-assemblies it took."""

    request: Assembled
    tokens: int
    limit: int
    content_budget: int
    iterations: int
    first_tokens: int

    @property
    def fits(self) -> bool:
        return self.tokens <= self.limit


def final_fit(
    assemble: Callable[[int], Assembled],
    count: Callable[[Assembled], int],
    content_budget: int,
    limit: int,
    *,
    max_iterations: int = FINAL_FIT_MAX_ITERATIONS,
    margin: float = FINAL_FIT_MARGIN,
) -> FinalFit[Assembled]:
    """Assemble the request for `content_budget`, count it whole, and while it is over `limit`
    shrink the content budget by the measured overshoot (plus `margin` of it) and assemble again,
    at most `max_iterations` times. The caller hard-fails on a result that still does not fit."""
    request = assemble(content_budget)
    tokens = first = count(request)
    iterations = 0
    while tokens > limit and iterations < max_iterations:
        overshoot = tokens - limit
        content_budget = max(
            0, content_budget - overshoot - max(_FINAL_FIT_MIN_STEP, math.ceil(overshoot * margin))
        )
        request = assemble(content_budget)
        tokens = count(request)
        iterations += 1
    return FinalFit(request, tokens, limit, content_budget, iterations, first)
