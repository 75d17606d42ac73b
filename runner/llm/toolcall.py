"""One forced tool call that returns a parsed contract model, with one re-ask on bad output.

A response is bad when it has no tool call, calls another tool, carries arguments that are not
a JSON object, violates the contract's schema, or was cut off (`finish_reason == "length"`).
The re-ask feeds the concrete errors back (as a `tool` message answering the model's call, or a
`user` message when there was no call) and asks again once; a second bad response raises
MalformedOutput. The static prefix of the request (system prompt, tools) is never touched, so
the re-ask still hits the provider's prompt cache.

A request is counted before it is sent: by the server's own tokenizer when it is llama.cpp's or
llama-cpp-python's (runner.llm.native_tokens), else by cl100k_base (runner.llm.budget).

A request's tool schema carries its length and count bounds unless the settings or the endpoint
say otherwise (runner.llm.bounds): under `auto`, an endpoint whose `/v1/models` says it is
llama.cpp's or llama-cpp-python's server never gets them, and a call refused with a grammar error
is sent once more without them, the client's later calls leaving them out; the answer is
validated against the full contract either way.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall
from pydantic import ValidationError

from runner.core.contract import TOOL_MODELS, StrictModel, tool_schema
from runner.core.tokens import count_tokens
from runner.core.vocabulary import ExtractionUsage, PipelineWarning
from runner.errors import LLMError
from runner.llm.bounds import (
    DETECT_TIMEOUT_SECONDS,
    detect_server,
    has_bounds,
    refuses_bounds,
    remember_refusal,
    send_bounds,
    tool_without_bounds,
)
from runner.llm.breaker import CircuitOpen
from runner.llm.budget import (
    Preflight,
    RequestBudget,
    endpoint_budget,
    limits_defaulted_message,
    preflight,
)
from runner.llm.client import ContextLimitExceeded, GrammarRejected, LLMCallError, ResilientCaller
from runner.llm.native_tokens import native_failed, native_request_tokens

logger = logging.getLogger(__name__)

Model = TypeVar("Model", bound=StrictModel)

_MAX_ERRORS_FED_BACK = 12


# TOKEN_COUNT_ESTIMATE_USED's text when a server that counts natively could not.
NATIVE_FALLBACK_MESSAGE = (
    "the endpoint's tokenize route failed; prompts were counted with cl100k_base, which may "
    "differ from the model's own tokenizer"
)


class MalformedOutput(LLMError):
    """The model's output was still unusable after the re-ask."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RequestTooLarge(LLMError):
    """A request does not fit the model's input budget, even before it is sent."""


@dataclass
class _Verdict:
    value: StrictModel | None
    problem: str | None
    followup: list[dict[str, Any]]


def describe_validation_error(error: ValidationError) -> str:
    """The schema violations as `path: message` lines, without echoing the input values."""
    errors = error.errors(include_url=False, include_input=False)
    lines = [
        f"{'.'.join(str(part) for part in e['loc']) or '(root)'}: {e['msg']}"
        for e in errors[:_MAX_ERRORS_FED_BACK]
    ]
    if len(errors) > _MAX_ERRORS_FED_BACK:
        lines.append(f"... and {len(errors) - _MAX_ERRORS_FED_BACK} more errors")
    return "; ".join(lines)


def _parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    if isinstance(arguments, dict):  # a server that sends an object instead of a JSON string
        return arguments, None
    try:
        parsed: Any = json.loads(arguments if isinstance(arguments, str) else "")
        if isinstance(parsed, str):  # some servers double-encode the arguments
            parsed = json.loads(parsed)
    except json.JSONDecodeError as error:
        return None, f"the arguments are not valid JSON ({error.msg} at position {error.pos})"
    if not isinstance(parsed, dict):
        return None, f"the arguments must be a JSON object, got {type(parsed).__name__}"
    return parsed, None


def is_function_call(call: object) -> TypeGuard[ChatCompletionMessageFunctionToolCall]:
    """A function tool call; some local servers leave out `type`, which means the same."""
    return getattr(call, "type", None) in ("function", None) and (
        getattr(call, "function", None) is not None
    )


def judge_response(
    response: ChatCompletion,
    tool_name: str,
    max_tokens: int,
    model_type: type[StrictModel] | None = None,
) -> _Verdict:
    """Parse the forced call to `tool_name` out of `response` as `model_type` (by default the
    contract model of that tool), or say what is wrong with it and which messages would feed
    that back to the model."""
    if not response.choices:
        return _Verdict(None, "the response has no choices", [])
    choice = response.choices[0]
    message = choice.message
    calls = [call for call in message.tool_calls or [] if is_function_call(call)]
    call = next((c for c in calls if c.function.name == tool_name), calls[0] if calls else None)
    fix = f"Call `{tool_name}` again with corrected arguments."
    problem: str | None
    if call is None:
        problem = f"no tool call; you must call `{tool_name}`"
        followup: list[dict[str, Any]] = []
        if message.content:
            followup.append({"role": "assistant", "content": message.content[:2000]})
        followup.append({"role": "user", "content": f"Error: {problem}. {fix}"})
        return _Verdict(None, problem, followup)
    arguments, problem = _parse_arguments(call.function.arguments)
    if choice.finish_reason == "length":
        problem = (
            f"the output was cut off at the limit of {max_tokens} tokens; emit a shorter result "
            "with fewer items and shorter texts"
        )
    elif call.function.name != tool_name:
        problem = f"wrong tool `{call.function.name}`; the only tool to call is `{tool_name}`"
    value = None
    if problem is None:
        assert arguments is not None
        try:
            value = (model_type or TOOL_MODELS[tool_name]).model_validate(arguments)
        except ValidationError as error:
            problem = "schema violations: " + describe_validation_error(error)
    if problem is None:
        return _Verdict(value, None, [])
    # Echo only a well-formed JSON object: a proxy translating to another provider's format
    # must be able to parse the history it forwards.
    echoed = json.dumps(arguments, ensure_ascii=False) if arguments is not None else "{}"
    call_id = call.id or "call_0"
    followup = [
        {
            "role": "assistant",
            # A string, not null: llama-cpp-python's server refuses an assistant message whose
            # content is null (a 500 listing validation errors), which failed every re-ask.
            "content": "",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": echoed},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"Error: {problem}. {fix}"},
    ]
    return _Verdict(None, problem, followup)


class ToolCaller:
    """Forced tool calls through a ResilientCaller, accumulating usage."""

    def __init__(
        self,
        caller: ResilientCaller,
        usage: ExtractionUsage,
        *,
        temperature: float | None,
        max_tokens_param: str,
    ) -> None:
        self.caller = caller
        self.usage = usage
        self.temperature = temperature
        self.max_tokens_param = max_tokens_param
        self.usage_estimated = False
        self.count_estimated = False
        # Counted by the server's tokenizer at least once; its tokenize route failed, so counts
        # fell back to cl100k_base (TOKEN_COUNT_ESTIMATE_USED).
        self.native_counted = False
        self.native_fallback = False
        # Set once a call of this caller went without the schema's bounds because the endpoint
        # refused them (`auto`; `omit` is the operator's choice, not worth a warning).
        self.bounds_dropped = False

    def _record_usage(self, response: ChatCompletion, sent_tokens: int) -> None:
        self.usage.llm_calls += 1
        usage = response.usage
        if usage is None:
            # Some local servers report no usage: count what was sent and received ourselves.
            self.usage_estimated = True
            self.usage.prompt_tokens += sent_tokens
            received = "".join(
                call.function.arguments or ""
                for choice in response.choices
                for call in choice.message.tool_calls or []
                if is_function_call(call)
            )
            self.usage.completion_tokens += count_tokens(received).tokens
            return
        self.usage.prompt_tokens += usage.prompt_tokens or 0
        self.usage.completion_tokens += usage.completion_tokens or 0
        details = usage.prompt_tokens_details
        if details is not None and details.cached_tokens:
            self.usage.cached_tokens += details.cached_tokens

    def preflight(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], budget: int
    ) -> Preflight:
        """The token count of a request against `budget` (an estimate is remembered)."""
        checked = preflight(messages, tools, budget)
        self.count_estimated = self.count_estimated or checked.estimated
        return checked

    async def count(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        budget: int,
    ) -> Preflight:
        """The request's count against `budget`, by the server's own tokenizer when it is a
        llama.cpp or llama-cpp-python server (runner.llm.native_tokens), else `preflight`. A
        server whose tokenize route failed is counted by `preflight` and remembered
        (`native_fallback`)."""
        client = self.caller.client
        config = self.caller.config
        if config.schema_bounds == "auto":  # the one look at /v1/models send() takes anyway
            await detect_server(client, min(DETECT_TIMEOUT_SECONDS, config.timeout_seconds))
        native = await native_request_tokens(
            client, model, messages, tools, self.caller.redaction()
        )
        if native is not None:
            self.native_counted = True
            return Preflight(tokens=native, budget=budget, estimated=False)
        self.native_fallback = self.native_fallback or native_failed(client)
        return self.preflight(messages, tools, budget)

    async def send(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tool: dict[str, Any],
        max_output_tokens: int,
        sent_tokens: int,
    ) -> ChatCompletion:
        """One request that forces `tool`, its usage recorded. `sent_tokens` is the preflight
        count of the request. The tool's bounds are left out when the settings or the endpoint
        ask for it (see the module docstring). Raises LLMCallError (ContextLimitExceeded,
        GrammarRejected) or CircuitOpen."""
        config = self.caller.config
        mode = config.schema_bounds
        client = self.caller.client
        if mode == "auto":
            await detect_server(client, min(DETECT_TIMEOUT_SECONDS, config.timeout_seconds))
        bounded = send_bounds(mode, client)
        sent = tool if bounded else tool_without_bounds(tool)
        # Under `auto`, left out because the endpoint refused them before: said in the warning
        # (a server that said what it is in /v1/models is expected to need it, like `omit`).
        self.bounds_dropped = self.bounds_dropped or (mode == "auto" and refuses_bounds(client))
        try:
            response = await self._create(model, messages, sent, max_output_tokens, sent_tokens)
        except GrammarRejected as error:
            if not (bounded and mode == "auto" and has_bounds(tool)):
                raise
            remember_refusal(client)
            self.bounds_dropped = True
            logger.warning(
                "the LLM endpoint could not build a grammar from the %s schema (%s); sending "
                "it without length and count bounds from now on",
                tool["function"]["name"],
                str(error)[:200],
            )
            response = await self._create(
                model, messages, tool_without_bounds(tool), max_output_tokens, sent_tokens
            )
        self._record_usage(response, sent_tokens)
        return response

    async def _create(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tool: dict[str, Any],
        max_output_tokens: int,
        sent_tokens: int,
    ) -> ChatCompletion:
        request: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "tools": [tool],
            "tool_choice": {"type": "function", "function": {"name": tool["function"]["name"]}},
            self.max_tokens_param: max_output_tokens,
        }
        if self.temperature is not None:
            request["temperature"] = self.temperature
        try:
            return await self.caller.create(**request)
        except ContextLimitExceeded as error:
            error.sent_tokens = sent_tokens  # to compare with the server's own count
            raise

    async def call(
        self,
        *,
        model: str,
        messages: list[dict[str, Any]],
        tool_name: str,
        model_type: type[Model],
        max_output_tokens: int,
        input_budget: int,
        tool: dict[str, Any] | None = None,
    ) -> Model:
        """The tool's arguments parsed as `model_type`. `tool` is the tool's schema, by default
        the contract's schema of `tool_name`. Raises RequestTooLarge, MalformedOutput,
        LLMCallError or CircuitOpen."""
        tools = [tool if tool is not None else tool_schema(tool_name)]
        conversation = list(messages)
        problems: list[str] = []
        for attempt in range(2):
            checked = await self.count(model, conversation, tools, input_budget)
            if not checked.fits:
                if attempt == 0:
                    raise RequestTooLarge(
                        f"the request needs {checked.tokens} tokens, the budget of {model} "
                        f"is {input_budget}"
                    )
                break  # the re-ask does not fit: report the first problem
            response = await self.send(
                model=model,
                messages=conversation,
                tool=tools[0],
                max_output_tokens=max_output_tokens,
                sent_tokens=checked.tokens,
            )
            verdict = judge_response(response, tool_name, max_output_tokens, model_type)
            if verdict.value is not None:
                assert isinstance(verdict.value, model_type)
                return verdict.value
            assert verdict.problem is not None
            problems.append(verdict.problem)
            logger.info("bad %s output from %s: %s", tool_name, model, verdict.problem[:300])
            conversation = [*messages, *verdict.followup]
        summary = (
            problems[0] if len(problems) == 1 else f"{problems[0]}; after re-ask: {problems[-1]}"
        )
        raise MalformedOutput(f"unusable {tool_name} output: {summary}"[:1000])


def failure_reason(error: LLMError) -> str:
    """Why a model did not answer, in our words: never the server's message (which may quote
    the request or a key) nor the model's output."""
    if isinstance(error, CircuitOpen):
        return "its circuit breaker is open"
    if isinstance(error, MalformedOutput):
        return "invalid output twice"
    if isinstance(error, RequestTooLarge):
        return "the request exceeds its input budget"
    if isinstance(error, ContextLimitExceeded):
        return "the endpoint refused the request as over its context"
    if isinstance(error, LLMCallError):
        if error.status is not None:
            return f"HTTP {error.status}"
        return "no answer after its retries (timeout, connection error or malformed response)"
    return "the call failed"


@dataclass
class ModelRoute:
    """Which model of a ModelCall's chain answered, with its budget, and why each model before
    it did not. One per job (a ModelCall serves every job): a job passes the same route to its
    later calls (a re-ask), which then start with the model that answered."""

    model: str | None = None
    budget: RequestBudget | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)  # (model, why it failed)
    # A server's tokenize route failed: a request was counted with cl100k_base instead.
    native_fallback: bool = False

    def warnings(self, call: ModelCall) -> list[PipelineWarning]:
        """LLM_FALLBACK_MODEL_USED when a fallback model answered (naming it and why the models
        before it failed); LIMITS_DEFAULTED when the answering model's context was assumed or
        learned, naming the setting that would make it exact."""
        found: list[PipelineWarning] = []
        if self.model is not None and self.model != call.model:
            why = "; ".join(f"{model!r} failed: {reason}" for model, reason in self.failures)
            found.append(
                PipelineWarning(
                    "LLM_FALLBACK_MODEL_USED",
                    f"fallback model {self.model!r} answered ({why})",
                )
            )
        if self.native_fallback:
            found.append(PipelineWarning("TOKEN_COUNT_ESTIMATE_USED", NATIVE_FALLBACK_MESSAGE))
        if self.budget is not None and self.budget.defaulted:
            setting = call.context_setting(self.budget.model)
            found.append(
                PipelineWarning("LIMITS_DEFAULTED", limits_defaulted_message(self.budget, setting))
            )
        return found


@dataclass
class ModelCall:
    """Forced tool calls to one `model` through a ToolCaller over `caller` (retries, the
    endpoint's breaker), then, when it fails after its retries (call errors, its breaker open,
    invalid output twice, a request over its budget), to each of `fallbacks` in order: a model
    of the same endpoint with its own caller and breaker (runner.llm.breaker.model_breaker). The
    input budget is the answering model's, as the chat extractor sizes it (settings, what the
    endpoint taught, the table), computed per call so a learned limit applies at once. The
    document summarizer and the report writer are built on it."""

    caller: ResilientCaller
    model: str
    max_output_tokens: int = 2048  # what one answer may take: each kind sets its own
    max_tokens_param: str = "max_tokens"
    temperature: float | None = 0.0
    fallbacks: tuple[tuple[ResilientCaller, str], ...] = ()

    def context_setting(self, model: str) -> str | None:
        """The setting that sizes `model`'s context: the reduce model's, else none."""
        return "DIGEST_REDUCE_CONTEXT_TOKENS" if model == self.caller.config.reduce_model else None

    def budget(self, model: str | None = None) -> RequestBudget:
        """The budget of `model` (by default the primary)."""
        model = model or self.model
        config = self.caller.config
        # On the reduce model its context setting applies; the output stays the caller's own,
        # not DIGEST_REDUCE_OUTPUT_TOKENS.
        context = config.reduce_context_tokens if model == config.reduce_model else None
        return endpoint_budget(
            config,
            model,
            wanted_output_tokens=self.max_output_tokens,
            context_tokens=context,
            output_tokens=None,
        )

    def refusal(self) -> CircuitOpen | None:
        """The primary's CircuitOpen while every model's breaker is open (nothing would be
        sent), else None."""
        refused = self.caller.breaker.refusal()
        if refused is None or any(c.breaker.refusal() is None for c, _ in self.fallbacks):
            return None
        return refused

    def tools(self, usage: ExtractionUsage, caller: ResilientCaller | None = None) -> ToolCaller:
        return ToolCaller(
            caller or self.caller,
            usage,
            temperature=self.temperature,
            max_tokens_param=self.max_tokens_param,
        )

    async def call_tool(
        self,
        messages: list[dict[str, Any]],
        usage: ExtractionUsage,
        tool: dict[str, Any],
        model_type: type[Model],
        route: ModelRoute | None = None,
    ) -> Model:
        """`tool`'s arguments parsed as `model_type`, one re-ask on bad output; usage added to
        `usage`, the answering model to `route`. Raises (the primary's error, once every model
        failed) MalformedOutput, RequestTooLarge, LLMCallError or CircuitOpen."""
        route = route if route is not None else ModelRoute()
        chain = [(self.caller, self.model), *self.fallbacks]
        names = [model for _, model in chain]
        start = names.index(route.model) if route.model in names else 0
        first_error: LLMError | None = None
        for caller, model in chain[start:]:
            budget = self.budget(model)
            tools = self.tools(usage, caller)
            try:
                value = await tools.call(
                    model=model,
                    messages=messages,
                    tool_name=tool["function"]["name"],
                    model_type=model_type,
                    max_output_tokens=budget.max_output_tokens,
                    input_budget=budget.input_tokens,
                    tool=tool,
                )
            except LLMError as error:
                route.native_fallback = route.native_fallback or tools.native_fallback
                if not self.fallbacks:
                    raise
                reason = failure_reason(error)
                route.failures.append((model, reason))
                logger.warning("llm.model_failed model=%s reason=%s", model, reason)
                first_error = first_error or error
                continue
            route.native_fallback = route.native_fallback or tools.native_fallback
            route.model, route.budget = model, budget
            if model != self.model:
                logger.info("llm.fallback_model_used model=%s", model)
            return value
        assert first_error is not None
        raise first_error


__all__ = [
    "MalformedOutput",
    "ModelCall",
    "ModelRoute",
    "RequestTooLarge",
    "ToolCaller",
    "failure_reason",
    "is_function_call",
    "judge_response",
]
