"""The LLM report writer: the model answers the question from numbered evidence through one
forced tool call with structured citations, the citation audit checks every sentence, the model
gets ONE re-ask with the concrete audit errors, and what still fails is dropped.

- Evidence: the ranked units (`runner.reports.evidence`), fitted to the model's input budget
  (`runner.reports.evidence_budget`), at most the synthesis phase's share of it
  (`runner.core.fidelity.SYNTHESIS_BUDGET_SHARE`, 0.85: the rest is for the instructions, the
  tool schema, the question and slack; recorded as `phase_budget_share`), shown as `<source id="E1" ...>` in priority order. `E`
  ids are the request's own: the report's `S1..Sn` are numbered afterwards by first appearance,
  so a model never decides the numbering. Final fit (`runner.llm.budget.final_fit`): the whole
  request is counted as it will be sent; one still over the budget is fitted again with the
  evidence budget lowered by the overshoot, at most twice (each item's record then keeps the
  first fitting as its `synthesis` phase and the last as its `final_fit` phase), then refused.
  A llama.cpp or llama-cpp-python server's own count (runner.llm.native_tokens) is checked
  last: a request over the limit by it is fitted again to the share of the budget the ratio of
  the two counts leaves (a `final_fit` step with reason `server_tokenizer`), and the tool
  call's preflight checks the request by the server's count once more (`EvidenceOverflow`, as
  is evidence whose protected units do not fit even as headlines). With archiving on, the whole
  text of every unit given in part or left out is archived and its hash recorded.
- Answer: `emit_report` (`WrittenReport`, a Pydantic model whose JSON schema is the tool's):
  a title, answer sentences, sections (heading + sentences) and open points, each sentence
  {sentence, source_ids}. Citations are data, never markers parsed out of prose.
- Audit: an id that is not one of the request's is `unknown_source`; a sentence without ids
  `no_citation`; one whose content words its cited text does not hold `low_support`
  (`runner.reports.audit.sentence_problem`). If any sentence fails, the model's answer and a
  tool message listing each failing sentence (number, code, ids) go back once
  (`audit.re_asked` = the sentences sent back); the corrected answer replaces the first one.
  If the re-ask call itself fails, the first answer stands. Then `accept_sentences` drops what
  still fails, with its reason: nothing unsupported is stored as cited.
- The title is kept only when its words are in the question or the kept sentences; otherwise
  it is the question (`extractive.report_title`).
Model text is untrusted: it is never logged, only counts and codes are.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any
from xml.sax.saxutils import escape, quoteattr

from pydantic import Field

from runner.core.contract import StrictModel, model_schema
from runner.core.fidelity import (
    PHASE_FINAL_FIT,
    PHASE_SYNTHESIS,
    SYNTHESIS_BUDGET_SHARE,
    latest_phase,
    merge_fidelity,
)
from runner.core.tokens import count_tokens
from runner.core.vocabulary import ExtractionUsage
from runner.documents.archive import write_archive
from runner.documents.canonical import source_text_hash
from runner.documents.errors import ArchiveError
from runner.errors import LLMError
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP, support_share
from runner.grounding.footnotes import FootnotedSentence, Section
from runner.llm.bounds import DETECT_TIMEOUT_SECONDS, detect_server
from runner.llm.budget import FINAL_FIT_MARGIN, count_request_tokens, final_fit
from runner.llm.native_tokens import native_request_tokens
from runner.llm.prompts import REPORT_PROMPT, load_prompt
from runner.llm.toolcall import ModelCall, ModelRoute, RequestTooLarge
from runner.reports.audit import ReportAudit, accept_sentences, sentence_problem
from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.evidence_budget import (
    DEFAULT_MAX_UNITS,
    PHASE,
    EvidenceFit,
    FittedUnit,
    fit_evidence,
    protected_ids,
    unfitted,
)
from runner.reports.extractive import report_title
from runner.reports.report import ANSWER_HEADING, OPEN_POINTS_HEADING, Report, ReportSection
from runner.reports.sources import MessageSource, ReportSource

logger = logging.getLogger(__name__)

REPORT_TOOL = "emit_report"
# Part of the writer's name (so of the report cache key): bump with a new prompt file.
REPORT_PROMPT_VERSION = "report-1"
_PROMPT_FILE_VERSION = "v1"
_MAX_OUTPUT_TOKENS = 3000
# Room kept in the input budget for the re-ask: the echoed answer and the audit errors.
_REASK_RESERVE_TOKENS = _MAX_OUTPUT_TOKENS + 600
MAX_SENTENCE_CHARS = 600
MAX_HEADING_CHARS = 120
_SHOWN_SENTENCE_CHARS = 100  # of a failing sentence, in the re-ask (enough to recognise it)
# The archive folder (runner.documents.archive) of the whole texts of degraded evidence units.
EVIDENCE_ARCHIVE_SOURCE = "report-evidence"
_REMEDY = "raise DIGEST_REDUCE_CONTEXT_TOKENS, or choose fewer sources or quoted phrases"


class EvidenceOverflow(RequestTooLarge):
    """The evidence the report must keep does not fit the model's budget: the top units
    condensed and the protected ones cut to headlines are still over it, or the whole request
    is over it after the final fit. `fit` holds its records and warnings."""

    def __init__(self, message: str, fit: EvidenceFit) -> None:
        super().__init__(message)
        self.fit = fit


class CitedSentence(StrictModel):
    sentence: str = Field(min_length=1, max_length=MAX_SENTENCE_CHARS)
    source_ids: list[Annotated[str, Field(max_length=12)]] = Field(
        max_length=8, description="Ids (E1, E2, ...) of the sources the sentence rests on."
    )


class WrittenSection(StrictModel):
    heading: str = Field(min_length=1, max_length=MAX_HEADING_CHARS)
    sentences: list[CitedSentence] = Field(max_length=12)


class WrittenReport(StrictModel):
    title: str = Field(min_length=1, max_length=160)
    answer: list[CitedSentence] = Field(max_length=5)
    sections: list[WrittenSection] = Field(default_factory=list, max_length=8)
    open_points: list[CitedSentence] = Field(default_factory=list, max_length=6)

    def sentences(self) -> list[CitedSentence]:
        """Every sentence in reading order (the order the audit numbers them)."""
        body = [s for section in self.sections for s in section.sentences]
        return [*self.answer, *body, *self.open_points]


@cache
def _report_tool_json() -> str:
    # Generated once (a schema takes milliseconds to build, and every request sends it), in the
    # compact form the chat extractor's tools use (`runner.core.contract.model_schema`).
    return json.dumps(
        {
            "type": "function",
            "function": {
                "name": REPORT_TOOL,
                "description": "Report the answer to the question, every sentence citing sources.",
                "parameters": model_schema(WrittenReport),
            },
        }
    )


def report_tool_schema() -> dict[str, Any]:
    """The `emit_report` tool, a fresh copy for each caller."""
    schema: dict[str, Any] = json.loads(_report_tool_json())
    return schema


def evidence_id(index: int) -> str:
    return f"E{index + 1}"


def _attributes(unit: FittedUnit) -> str:
    return _evidence_attributes(unit.evidence)


def unit_overhead(evidence: Evidence) -> int:
    """Tokens of a unit's tags in the request (its id taken at two digits), for the fitting."""
    tag = f"<source id={quoteattr('E00')} {_evidence_attributes(evidence)}></source>\n"
    return count_tokens(tag).tokens


def _evidence_attributes(evidence: Evidence) -> str:
    source = evidence.source
    # A digest's claim (a decision, an open question, ...) says which kind it is.
    kind = "" if evidence.kind == "sentence" else f" kind={quoteattr(evidence.kind)}"
    if isinstance(source, MessageSource):
        return (
            f"channel={quoteattr(source.channel)} author={quoteattr(source.author)} "
            f"time={quoteattr(source.ts.isoformat())}{kind}"
        )
    return f"document={quoteattr(source.title)} locator={quoteattr(source.locator)}{kind}"


def build_messages(question: str, units: list[FittedUnit]) -> list[dict[str, Any]]:
    sources = "\n".join(
        f"<source id={quoteattr(evidence_id(i))} {_attributes(u)}>{escape(u.text)}</source>"
        for i, u in enumerate(units)
    )
    user = f"Question: {' '.join(question.split())}\n\n<sources>\n{sources}\n</sources>"
    system = load_prompt(REPORT_PROMPT, _PROMPT_FILE_VERSION).text
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class SentenceFailure:
    index: int  # in reading order, from 1 as the re-ask names it
    code: str  # unknown_source, no_citation, low_support
    ids: tuple[str, ...]


# A request's `E` id → what a sentence citing it cites (a digest claim: every message it rests on).
SourceMap = dict[str, tuple[ReportSource, ...]]


def cited_sources(ids: list[str], sources: SourceMap) -> tuple[ReportSource, ...]:
    """The sources of known `ids`, each once, in order."""
    return tuple(dict.fromkeys(s for i in dict.fromkeys(ids) for s in sources[i]))


def sentence_failures(
    written: WrittenReport, sources: SourceMap, min_overlap: float
) -> list[SentenceFailure]:
    """The audit's per-sentence problems of an answer, against the request's `E` ids."""
    failures = []
    for index, sentence in enumerate(written.sentences(), start=1):
        unknown = tuple(i for i in sentence.source_ids if i not in sources)
        if unknown:
            failures.append(SentenceFailure(index, "unknown_source", unknown))
            continue
        reason = sentence_problem(
            sentence.sentence, cited_sources(sentence.source_ids, sources), min_overlap
        )
        if reason is not None:
            failures.append(SentenceFailure(index, reason, tuple(sentence.source_ids)))
    return failures


_EXPLAIN = {
    "unknown_source": "cites ids that are not among the sources",
    "no_citation": "cites no source",
    "low_support": "is not supported by the sources it cites (its content words are not there)",
}


def reask_text(written: WrittenReport, failures: list[SentenceFailure]) -> str:
    """The tool message of the re-ask: each failing sentence, its code and ids, and the fix."""
    sentences = written.sentences()
    lines = []
    for failure in failures:
        shown = " ".join(sentences[failure.index - 1].sentence.split())
        if len(shown) > _SHOWN_SENTENCE_CHARS:
            shown = shown[:_SHOWN_SENTENCE_CHARS] + "…"
        ids = ", ".join(failure.ids) or "none"
        lines.append(
            f"- sentence {failure.index} ({shown!r}): {failure.code}, ids: {ids}; it "
            f"{_EXPLAIN[failure.code]}"
        )
    return (
        "Citation audit errors:\n" + "\n".join(lines) + "\n"
        f"Call `{REPORT_TOOL}` again with the whole corrected report: cite only ids of the "
        "sources, make each sentence say what its cited sources say, and leave out sentences "
        "no source supports. Sentences without errors may stay as they are."
    )


def to_report(
    question: str, written: WrittenReport, sources: SourceMap
) -> tuple[Report, Counter[str]]:
    """The draft report of an answer and the sentences left out for unknown ids (they cannot
    be represented as cited: their ids resolve to nothing)."""
    unknown: Counter[str] = Counter()

    def kept(sentences: list[CitedSentence]) -> tuple[FootnotedSentence[ReportSource], ...]:
        out = []
        for cited in sentences:
            if any(i not in sources for i in cited.source_ids):
                unknown["unknown_source"] += 1
            else:
                text = " ".join(cited.sentence.split())
                out.append(FootnotedSentence(text, cited_sources(cited.source_ids, sources)))
        return tuple(out)

    sections: list[ReportSection] = [Section(ANSWER_HEADING, kept(written.answer))]
    for section in written.sections:
        heading = " ".join(section.heading.split())[:MAX_HEADING_CHARS]
        sections.append(Section(heading, kept(section.sentences)))
    sections.append(Section(OPEN_POINTS_HEADING, kept(written.open_points), bullets=True))
    return Report(question, " ".join(written.title.split()), tuple(sections)), unknown


def checked_title(report: Report, min_overlap: float) -> str:
    """The model's title when its words are in the question or the kept sentences."""
    grounds = [report.question, *(s.sentence for s in report.sentences())]
    share = support_share(report.title, grounds)
    if share is None or share < min_overlap:
        return report_title(report.question)
    return report.title


@dataclass
class LLMReportRun:
    """One LLM report: the evidence fitting, the final answer as a draft, the audited report."""

    fit: EvidenceFit
    draft: Report
    report: Report
    audit: ReportAudit
    usage: ExtractionUsage
    warnings: list[dict[str, Any]] = field(default_factory=list)
    # The model that answered (a fallback model's name when the primary failed) and the notes
    # that do not make the report partial: LLM_FALLBACK_MODEL_USED, LIMITS_DEFAULTED.
    model: str = ""
    notes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ReportCall(ModelCall):
    """Forced `emit_report` calls to `model` through the tool-call path of the chat extractor
    (`runner.llm.toolcall.ModelCall`: preflight, one re-ask on malformed output, usage)."""

    max_output_tokens: int = _MAX_OUTPUT_TOKENS

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        usage: ExtractionUsage,
        route: ModelRoute | None = None,
    ) -> WrittenReport:
        """Raises MalformedOutput, RequestTooLarge, LLMCallError or CircuitOpen."""
        return await self.call_tool(messages, usage, report_tool_schema(), WrittenReport, route)


class LLMReportWriter:
    """Writes a report with the model behind `call` (see the module docstring)."""

    def __init__(
        self,
        call: ReportCall,
        *,
        min_overlap: float = DEFAULT_MIN_OVERLAP,
        max_units: int = DEFAULT_MAX_UNITS,
        archive_dir: Path | None = None,
    ) -> None:
        self.call = call
        self.min_overlap = min_overlap
        self.max_units = max_units
        self.archive_dir = archive_dir

    @property
    def version(self) -> str:
        """What the report is a function of besides its inputs: part of the cache key."""
        return self.version_for(self.call.model)

    def version_for(self, model: str) -> str:
        """The version of a report `model` wrote (a fallback model's report has its own key)."""
        config = self.call.caller.config
        # The budget switches change what the model sees; their defaults keep the old keys.
        switches = ("" if config.token_management_enabled else ":unbudgeted") + (
            "" if config.allow_content_dropping else ":nodrop"
        )
        return f"llm:{model}:{REPORT_PROMPT_VERSION}:{self.max_units}{switches}"

    def evidence_budget(self, question: str) -> int:
        """The model's input budget less the request without evidence and the re-ask's room, at
        most the synthesis phase's share of the effective input budget (`phase_budget`)."""
        static, _ = count_request_tokens(build_messages(question, []), [report_tool_schema()])
        return min(self.request_limit() - static, self.phase_budget())

    def phase_budget(self) -> int:
        """The most evidence may take: `SYNTHESIS_BUDGET_SHARE` of the effective input budget."""
        return math.floor(self.call.budget().input_tokens * SYNTHESIS_BUDGET_SHARE)

    def request_limit(self) -> int:
        """Tokens the first request may take: the input budget less the re-ask's room."""
        return self.call.budget().input_tokens - _REASK_RESERVE_TOKENS

    def fitted_request(
        self, question: str, ranked: list[RankedEvidence], scale: float = 1.0
    ) -> tuple[EvidenceFit, list[dict[str, Any]]]:
        """The evidence fitted to the budget and the request's messages, after the final fit
        (see the module docstring); `scale` (below 1) is the share of the budget to fit to, in
        cl100k_base tokens, for a server whose tokenizer counts more. Raises
        EvidenceOverflow."""
        config = self.call.caller.config
        if not config.token_management_enabled:
            fit = unfitted(ranked, self.max_units)
            return fit, build_messages(question, fit.units)
        protected = protected_ids(question, ranked)
        tools = [report_tool_schema()]

        fits: list[EvidenceFit] = []  # every assembly's fitting, the first one's records kept

        def assemble(budget: int) -> tuple[EvidenceFit, list[dict[str, Any]]]:
            fit = fit_evidence(
                ranked,
                budget,
                max_units=self.max_units,
                protected=protected,
                allow_dropping=config.allow_content_dropping,
                overhead=unit_overhead,
            )
            if fit.over_budget:
                raise EvidenceOverflow(
                    f"the evidence that must be kept needs {fit.tokens} tokens, the model's "
                    f"evidence budget is {fit.budget_tokens}: {_REMEDY}",
                    fit,
                )
            fits.append(fit)
            return fit, build_messages(question, fit.units)

        fitted = final_fit(
            assemble,
            lambda request: count_request_tokens(request[1], tools)[0],
            math.floor(self.evidence_budget(question) * scale),
            math.floor(self.request_limit() * scale),
        )
        fit, messages = fitted.request
        fit.phase_share, fit.phase_budget_tokens = SYNTHESIS_BUDGET_SHARE, self.phase_budget()
        if fitted.iterations:
            # The synthesis fitting's records stay as the items' history; what the final fit
            # made of each item is its `final_fit` phase, which the item ends as.
            fit.content_fidelity = merge_fidelity(
                fits[0].content_fidelity, as_phase(fit.content_fidelity, PHASE_FINAL_FIT)
            )
            fit.fidelity.append(
                {
                    "phase": PHASE,
                    "step": "final_fit",
                    "original_tokens": fitted.first_tokens,
                    "final_tokens": fitted.tokens,
                    "reason": "request_over_budget",
                    "iterations": fitted.iterations,
                    "request_limit": fitted.limit,
                }
            )
        if not fitted.fits:
            raise EvidenceOverflow(
                f"the request needs {fitted.tokens} tokens after {fitted.iterations} final-fit "
                f"passes, the model's budget is {fitted.limit}: {_REMEDY}",
                fit,
            )
        return fit, messages

    async def fitted_for_server(
        self, question: str, ranked: list[RankedEvidence]
    ) -> tuple[EvidenceFit, list[dict[str, Any]]]:
        """`fitted_request`, counted again by the server's own tokenizer when it has one
        (runner.llm.native_tokens): a request over the limit by the server's count is fitted
        again to the share of the budget the two counts' ratio leaves, the first fitting kept
        as each unit's `synthesis` phase and the last as its `final_fit`."""
        fit, messages = self.fitted_request(question, ranked)
        caller = self.call.caller
        if not caller.config.token_management_enabled:
            return fit, messages
        if caller.config.schema_bounds == "auto":  # the look the tool call takes anyway
            await detect_server(caller.client, DETECT_TIMEOUT_SECONDS)
        tools = [report_tool_schema()]
        redaction = caller.redaction()
        theirs = await native_request_tokens(
            caller.client, self.call.model, messages, tools, redaction
        )
        limit = self.request_limit()
        if theirs is None or theirs <= limit:
            return fit, messages
        ours, _ = count_request_tokens(messages, tools)
        # The ratio of the whole request's counts, less the final fit's margin: the evidence's
        # own ratio may be a little higher than the prompt's.
        scale = ours / theirs * (1 - FINAL_FIT_MARGIN)
        refit, messages = self.fitted_request(question, ranked, scale=scale)
        refit.content_fidelity = merge_fidelity(
            {item: dict(record) for item, record in fit.content_fidelity.items()},
            as_phase(refit.content_fidelity, PHASE_FINAL_FIT, latest=True),
        )
        refit.fidelity.append(
            {
                "phase": PHASE,
                "step": "final_fit",
                "original_tokens": theirs,
                "final_tokens": await native_request_tokens(
                    caller.client, self.call.model, messages, tools, redaction
                )
                or 0,
                "reason": "server_tokenizer",
                "request_limit": limit,
            }
        )
        return refit, messages

    async def write(self, question: str, ranked: list[RankedEvidence]) -> LLMReportRun:
        """Raises (from the first call only) EvidenceOverflow, MalformedOutput, RequestTooLarge,
        LLMCallError or CircuitOpen; a failing re-ask keeps the first answer with a
        `re_ask_failed` warning."""
        fit, messages = await self.fitted_for_server(question, ranked)
        if self.archive_dir is not None:
            await asyncio.to_thread(archive_degraded, fit, self.archive_dir)
        sources = {evidence_id(i): u.evidence.sources for i, u in enumerate(fit.units)}
        usage = ExtractionUsage()
        route = ModelRoute()  # the re-ask goes to the model that answered
        written = await self.call(messages, usage, route)
        failures = sentence_failures(written, sources, self.min_overlap)
        run_warnings: list[dict[str, Any]] = []
        re_asked = len(failures)
        if failures:
            logger.info(
                "report.re_ask sentences=%d codes=%s",
                len(failures),
                ",".join(sorted({f.code for f in failures})),
            )
            followup: list[dict[str, Any]] = [
                {
                    "role": "assistant",
                    # A string, not null: llama-cpp-python's server refuses an assistant message
                    # whose content is null (a 500), which failed every re-ask there.
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_report",
                            "type": "function",
                            "function": {
                                "name": REPORT_TOOL,
                                "arguments": written.model_dump_json(),
                            },
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_report",
                    "content": reask_text(written, failures),
                },
            ]
            try:
                written = await self.call([*messages, *followup], usage, route)
            except LLMError as error:
                logger.warning("report.re_ask_failed error=%s", type(error).__name__)
                run_warnings.append(
                    {
                        "code": "re_ask_failed",
                        "message": (
                            f"the re-ask failed ({type(error).__name__}); the first answer was audited"
                        ),
                    }
                )
        draft, unknown = to_report(question, written, sources)
        report, audit = accept_sentences(draft, self.min_overlap)
        audit.proposed += sum(unknown.values())
        audit.reasons.update(unknown)
        audit.re_asked = re_asked
        report = Report(report.question, checked_title(report, self.min_overlap), report.sections)
        notes = [{**warning.as_json(), "phase": PHASE} for warning in route.warnings(self.call)]
        model = route.model or self.call.model
        return LLMReportRun(fit, draft, report, audit, usage, run_warnings, model, notes)


def as_phase(
    records: dict[str, dict[str, Any]], phase: str, *, latest: bool = False
) -> dict[str, dict[str, Any]]:
    """A fitting's synthesis records (with `latest`, each unit's last phase) written as
    `phase`'s (a final fit's re-fitting)."""
    written: dict[str, dict[str, Any]] = {}
    for item_id, record in records.items():
        found = latest_phase(record) if latest else None
        if found is None and PHASE_SYNTHESIS in record.get("phases", {}):
            found = (PHASE_SYNTHESIS, record["phases"][PHASE_SYNTHESIS])
        if found is not None:
            written[item_id] = {"phases": {phase: dict(found[1])}}
    return written


def archive_degraded(fit: EvidenceFit, archive_dir: Path) -> None:
    """Archive the whole text of every unit given in part or left out, and record its hash
    (`content_archive_hashes`, and `archive_hash` in its item record). A failing write is an
    `ARCHIVE_WRITE_FAILED` warning, never a failed report."""
    try:
        for item_id, text in fit.degraded_texts().items():
            write_archive(archive_dir, EVIDENCE_ARCHIVE_SOURCE, text)
            digest = source_text_hash(text)
            fit.content_archive_hashes[item_id] = digest
            latest = latest_phase(fit.content_fidelity[item_id])
            assert latest is not None  # degraded_texts names items with a phase only
            latest[1]["archive_hash"] = digest
    except (OSError, ArchiveError) as error:
        logger.warning("report.archive_failed error=%s", type(error).__name__)
        fit.warnings.append(
            {
                "code": "ARCHIVE_WRITE_FAILED",
                "message": f"the evidence archive could not be written ({type(error).__name__})",
                "phase": PHASE,
            }
        )
