"""The LLM summarizer of a document digest: the query in the prompt, one forced tool call for a
document that fits one request (a map-reduce over all of a larger one), validated output.

A document whose text fits one request (at most `excerpt_chars`, DIGESTD_DOC_LLM_EXCERPT_CHARS,
and within the model's input budget) is read whole by one request: the model sees the research
question and the document's passages in order, and must call `emit_document_digest` with a
summary (≤2000 characters) and key points (≤10 × ≤500). A larger one is summarized part by part
and merged by the chat path's reduce (`runner.documents.llm_map_reduce`), so every part of it is
read; its key points pass the same check below. The arguments are validated with Pydantic; one bad
answer is fed back once, a second is a `SummarizerError`. Key points whose words are not found
in the excerpts (`runner.grounding.claim_support.support_share` below `min_support`) are dropped with a warning:
a digest must not carry claims its document does not make.

Document text is untrusted data: the system prompt (runner/prompts/doc_summary.v1.md) says so,
and it is escaped inside `<excerpt>` tags. The call is the chat extractor's
(`runner.llm.toolcall.ToolCaller`: forced tool, preflight against the model's input budget, usage
figures, one re-ask with the concrete errors) over a `runner.llm.client.ResilientCaller` (retries,
the endpoint's circuit breaker); `resilient_tool_call` binds them to a model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any
from xml.sax.saxutils import escape, quoteattr

from pydantic import Field

from runner.core.contract import StrictModel
from runner.core.vocabulary import ExtractionUsage, PipelineWarning
from runner.documents.errors import DocumentError
from runner.documents.llm_map_reduce import DocumentMapReduce, SummarizerFailed
from runner.documents.locators import make_locator
from runner.documents.summarize import (
    KEY_POINT_MAX_CHARS,
    MAX_KEY_POINTS,
    SUMMARY_MAX_CHARS,
    SummaryRequest,
    SummaryResult,
    fit_text,
)
from runner.errors import LLMError
from runner.grounding.claim_support import support_share
from runner.llm.client import ResilientCaller
from runner.llm.prompts import DOC_SUMMARY_PROMPT, load_prompt
from runner.llm.toolcall import (
    MalformedOutput,
    ModelCall,
    ModelRoute,
    RequestTooLarge,
    is_function_call,
)

DOCUMENT_DIGEST_TOOL = "emit_document_digest"
# Part of the fingerprint (so of the digest cache key): the version of doc_summary.v1.md and of
# the map-reduce's doc_map.v1.md and doc_reduce.v1.md. A new prompt file is a new version here.
PROMPT_VERSION = "doc-digest-2"  # 2: map-reduce over the whole of a large document
_PROMPT_FILE_VERSION = "v1"
# What the summary and key points may take (summary ≤2000 chars + 10 key points ≤500).
_MAX_OUTPUT_TOKENS = 1500


class SummarizerError(DocumentError, LLMError):
    """The summarizer could not produce a valid summary (the digest is skipped, not faked)."""


class DocumentSummary(StrictModel):
    summary: str = Field(max_length=SUMMARY_MAX_CHARS, description="Answer-focused summary.")
    key_points: list[Annotated[str, Field(min_length=1, max_length=KEY_POINT_MAX_CHARS)]] = Field(
        default_factory=list, max_length=MAX_KEY_POINTS
    )


def document_tool_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": DOCUMENT_DIGEST_TOOL,
            "description": "Report the query-focused summary and key points of the document.",
            "parameters": DocumentSummary.model_json_schema(),
        },
    }


def document_excerpts(request: SummaryRequest) -> list[tuple[str, str]]:
    """`(locator, text)` of every passage of the document, in document order: what one request
    shows the model of a document that fits it."""
    return [
        (
            make_locator(
                request.canonical_text,
                chunk.start,
                chunk.end,
                chunk.text,
                chunk.page,
                request.page_spans,
            ),
            chunk.text,
        )
        for chunk in request.chunks
    ]


def build_messages(
    request: SummaryRequest, excerpts: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    title = f"Document title: {escape(request.title)}\n" if request.title else ""
    body = "\n".join(
        f"<excerpt locator={quoteattr(locator)}>{escape(text)}</excerpt>"
        for locator, text in excerpts
    )
    user = (
        f"Research question: {request.query.strip() or '(none: summarize the document)'}\n"
        f"{title}Limits: summary at most {min(request.summary_budget, SUMMARY_MAX_CHARS)} "
        f"characters; at most {min(request.max_key_points, MAX_KEY_POINTS)} key points.\n\n"
        f"<document>\n{body}\n</document>"
    )
    system = load_prompt(DOC_SUMMARY_PROMPT, _PROMPT_FILE_VERSION).text
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class LLMSummarizer:
    """Summary and key points from an LLM through a forced tool call."""

    name = "llm"

    def __init__(
        self,
        call: SummaryCall,
        model: str,
        *,
        excerpt_chars: int = 32_000,
        min_support: float = 0.5,
    ) -> None:
        self.call = call
        self.model = model
        self.excerpt_chars = excerpt_chars
        self.min_support = min_support

    def fingerprint(self, model: str | None = None) -> str:
        """The cache key's part of the summarizer, with `model` (by default the primary)."""
        used = model or self.model
        return f"llm:{used}:{PROMPT_VERSION}:{self.excerpt_chars}:{self.min_support}"

    def refusal(self) -> LLMError | None:
        """CircuitOpen while the endpoint's breaker is open (shared with the chat extractor
        and the report writer): the job then skips the model without sending anything."""
        return self.call.refusal()

    def fits_one_request(self, request: SummaryRequest, usage: ExtractionUsage) -> bool:
        """Whether the whole document goes in one request: its text within `excerpt_chars` and
        the request within the model's input budget."""
        if sum(len(chunk.text) for chunk in request.chunks) > self.excerpt_chars:
            return False
        excerpts = document_excerpts(request)
        budget = self.call.budget()
        checked = self.call.tools(usage).preflight(
            build_messages(request, excerpts), [document_tool_schema()], budget.input_tokens
        )
        return checked.fits

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        usage = ExtractionUsage()
        if not self.fits_one_request(request, usage):
            return await self._map_reduce(request, usage)
        excerpts = document_excerpts(request)
        messages = build_messages(request, excerpts)
        route = ModelRoute()
        try:
            parsed = await self.call.summary(messages, usage, route)
        except MalformedOutput as error:
            reason = error.reason.replace(f"unusable {DOCUMENT_DIGEST_TOOL} output", "", 1)
            raise SummarizerError(
                "malformed_output", f"unusable summarizer output{reason}"[:500]
            ) from None
        except RequestTooLarge as error:
            raise SummarizerError("request_too_large", str(error)[:500]) from None
        result = self._checked(parsed, request, [text for _, text in excerpts], usage)
        # The model that answered keys the digest, so a fallback's is never served as the
        # primary's; its warnings (fallback used, limits assumed) go first.
        return replace(
            result,
            warnings=[*route.warnings(self.call), *result.warnings],
            model=route.model,
            fingerprint=self.fingerprint(route.model),
        )

    async def _map_reduce(self, request: SummaryRequest, usage: ExtractionUsage) -> SummaryResult:
        """The document in parts, each summarized, then merged (runner.documents.llm_map_reduce),
        key points checked as a one-request summary's are."""
        try:
            result = await DocumentMapReduce(
                self.call,
                request,
                max_chars=self.excerpt_chars,
                min_support=self.min_support,
                usage=usage,
            ).run()
        except SummarizerFailed as error:
            raise SummarizerError(error.code, error.reason) from None
        parsed = DocumentSummary.model_construct(
            summary=result.summary, key_points=result.key_points
        )
        checked = self._checked(parsed, request, result.sources, usage)
        # The parts go to the primary model only; its context assumed still says so.
        route = ModelRoute(model=self.call.model, budget=self.call.budget())
        return replace(
            checked,
            warnings=[*route.warnings(self.call), *result.warnings, *checked.warnings],
            partial=bool(result.failed),
            map_chunks=result.parts,
        )

    def _checked(
        self,
        parsed: DocumentSummary,
        request: SummaryRequest,
        sources: list[str],
        usage: ExtractionUsage,
    ) -> SummaryResult:
        warnings: list[PipelineWarning] = []
        key_points = []
        for point in parsed.key_points[: request.max_key_points]:
            share = support_share(point, sources)
            if share is not None and share < self.min_support:
                warnings.append(
                    PipelineWarning(
                        "unsupported_key_point",
                        f"a key point was dropped: only {share:.0%} of its words are in the "
                        "document",
                    )
                )
                continue
            key_points.append(point.strip())
        summary = parsed.summary.strip()
        if len(summary) > request.summary_budget:
            warnings.append(PipelineWarning("summary_shortened", "the summary exceeded its budget"))
            summary = fit_text(summary, request.summary_budget)
        return SummaryResult(summary=summary, key_points=key_points, warnings=warnings, usage=usage)


@dataclass
class SummaryCall(ModelCall):
    """Forced `emit_document_digest` calls to `model` through the chat extractor's tool-call
    path (`runner.llm.toolcall.ModelCall`), on the reduce model's budget."""

    max_output_tokens: int = _MAX_OUTPUT_TOKENS

    async def summary(
        self,
        messages: list[dict[str, Any]],
        usage: ExtractionUsage,
        route: ModelRoute | None = None,
    ) -> DocumentSummary:
        """The validated summary, with one re-ask on bad output; usage added to `usage`, the
        answering model to `route`. Raises MalformedOutput, RequestTooLarge, LLMCallError or
        CircuitOpen."""
        return await self.call_tool(messages, usage, document_tool_schema(), DocumentSummary, route)

    async def __call__(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> str:
        """One forced call of `tool` without validation or re-ask: the raw arguments of its
        call ("" when there is none). Raises RequestTooLarge, LLMCallError or CircuitOpen."""
        budget = self.budget()
        tools = self.tools(ExtractionUsage())
        checked = tools.preflight(messages, [tool], budget.input_tokens)
        if not checked.fits:
            raise RequestTooLarge(
                f"the request needs {checked.tokens} tokens, the budget of {self.model} "
                f"is {budget.input_tokens}"
            )
        response = await tools.send(
            model=self.model,
            messages=messages,
            tool=tool,
            max_output_tokens=budget.max_output_tokens,
            sent_tokens=checked.tokens,
        )
        for choice in response.choices[:1]:
            for tool_call in choice.message.tool_calls or []:
                if is_function_call(tool_call) and (
                    tool_call.function.name == tool["function"]["name"]
                ):
                    return str(tool_call.function.arguments or "")
        return ""


def resilient_tool_call(
    caller: ResilientCaller,
    model: str,
    *,
    max_output_tokens: int = _MAX_OUTPUT_TOKENS,
    max_tokens_param: str = "max_tokens",
    temperature: float | None = 0.0,
) -> SummaryCall:
    """The summarizer's calls to `model` over `caller` (its `create` does the retries and the
    circuit breaker; `CircuitOpen` and `LLMCallError` propagate to the caller)."""
    return SummaryCall(
        caller,
        model,
        max_output_tokens=max_output_tokens,
        max_tokens_param=max_tokens_param,
        temperature=temperature,
    )
