"""The report job: answer a question from chosen channels and documents with a report whose
every sentence cites `S1..Sn` sources, served from the report cache when nothing it reads has
changed.

The steps:
1. read the request (options: question, channel_ids, document_ids, since, until), each channel's
   messages with since <= ts < until (at most `max_messages` per channel: the newest, and a
   `window_cap` warning saying how many older ones of which channel were not read), the
   claims of the channel's digests whose window overlaps that range (decisions, action items,
   open questions, topic summaries, synthesized knowledge: evidence that cites the messages they
   rest on) and each document; a source that no longer exists FAILS the job (`source_gone`);
2. compute the cache key (`runner.reports.records.report_cache_key`: the question, the exact
   message revisions, digests, document texts and document digests read, the settings (with the
   decomposer's version), the writer: the offline
   extractor's version, or the LLM writer's model and prompt version); a stored report with
   that key ends the job at once, with no evidence gathered, no model called, nothing written;
3. otherwise split the question into sub-questions (the rules, or the model when the worker has
   one: `runner.reports.llm_decompose`; phase THREADING), gather, rank and merge the evidence of
   each, write a first offline answer and refine once for what it left open
   (`runner.reports.research`; phase MAP, one step per sub-question and one for the refinement;
   a document with a stored digest for the question gives that digest's snippets,
   `runner.reports.digest_evidence`), and write the report: with the LLM writer when the
   worker has one (`runner.reports.llm_writer`: evidence fitted to the model's budget, one
   re-ask with the audit's errors), else the offline extractive writer; the citation audit
   (`runner.reports.audit.accept_sentences`) drops what fails, never stored as cited;
   a chosen channel or document the report cites nothing of gets a `no_section` warning saying
   why (`runner.reports.coverage`: nothing in the range, nothing quotable, nothing matching);
4. what the research did goes into the report's `fidelity` under `research`; the report row
   and the job's end commit in one transaction (a lost lease rolls both back);
   then /metrics counts its citations, sources, orphans and audit failures
   (`runner.metrics.count_report`).
A failing model (call errors after retries, an open circuit breaker, unusable output twice, a
request too large for it) does not fail the job: it ends PARTIAL with the offline extractive
report, stored under the extractive writer's cache key (so a later run asks the model again)
and an `llm_writer_failed` warning.
Nothing here logs message or document text: only ids, counts and codes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from db import reports as report_queries
from db.jobs import JobStatus
from db.models import DigestJob
from db.reports import EMPTY_FIDELITY
from runner.core.cancel import Cancelled
from runner.core.job_options import ReportOptions
from runner.core.progress import JobPhase
from runner.core.vocabulary import ExtractionUsage
from runner.errors import LLMError
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP
from runner.jobs.base import JobContext, finish, report_progress
from runner.jobs.outcomes import Finished, Outcome, Stored
from runner.llm.toolcall import failure_reason
from runner.metrics import count_report
from runner.reports.audit import ReportAudit, accept_sentences
from runner.reports.coverage import missing_sections
from runner.reports.decompose import DECOMPOSER_VERSION, Decomposition, rules_decomposition
from runner.reports.evidence import (
    RankedEvidence,
    gather_evidence,
)
from runner.reports.extractive import EXTRACTOR_VERSION, write_extractive_report
from runner.reports.llm_decompose import ModelDecomposer
from runner.reports.llm_writer import EvidenceOverflow, LLMReportWriter
from runner.reports.merge import Gathered, merge_rankings, rank_for_sub_question
from runner.reports.records import report_cache_key, report_json
from runner.reports.report import Report, report_markdown
from runner.reports.research import (
    Research,
    final_extractive_report,
    refine_gathered,
    refinement_pool,
    with_research_phases,
)
from runner.reports.source_scores import channel_facts, score_sources
from runner.reports.store import ReportInputs, read_inputs

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGES = 20_000


@dataclass
class Written:
    """A written, audited report and what goes with it into the row and the job."""

    report: Report
    audit: ReportAudit
    writer: str
    cache_key: str
    status: JobStatus = JobStatus.SUCCEEDED
    fidelity: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_FIDELITY))
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ReportJobRunner:
    """Runs report jobs with the claims' overlap minimum, a per-channel message cap and, when
    the worker has a model, the LLM writer (else the offline extractive writer)."""

    min_overlap: float = DEFAULT_MIN_OVERLAP
    max_messages: int = DEFAULT_MAX_MESSAGES
    llm_writer: LLMReportWriter | None = None
    decomposer: ModelDecomposer | None = None

    async def run(self, job: DigestJob, context: JobContext) -> Outcome:
        options = ReportOptions.parse(job.options)
        question = options.question
        inputs = await read_inputs(context.pool, options, self.max_messages)
        stats = context.stats
        writer = self.llm_writer.version if self.llm_writer else EXTRACTOR_VERSION
        cache_key = self._cache_key(question, inputs, writer)
        stats.update(
            {
                "channels": len(inputs.channels),
                "documents": len(inputs.documents),
                "messages": sum(len(messages) for messages in inputs.channels),
                "writer": writer,
                "digest_claims": sum(len(claims) for claims in inputs.claims),
                "messages_not_read": sum(w["messages_not_read"] for w in inputs.window_warnings),
            }
        )
        async with context.pool.acquire() as connection:
            cached = await report_queries.cached_report_id(connection, cache_key)
        if cached is not None:
            stats["cache_hit"] = True
            logger.info("report.cache_hit job_id=%s report_id=%s", job.id, cached)
            return Finished(
                JobStatus.SUCCEEDED, message="served from the report cache", report_id=cached
            )
        stats["cache_hit"] = False
        if context.should_stop():
            raise Cancelled()
        research = await self._research(job, question, inputs, context)
        researched_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        ranked = research.ranked
        units = research.units
        stats["evidence_units"] = len(units)
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.REDUCE)
        if self.llm_writer is not None:
            written = await self._write_llm(job, question, ranked, inputs, cache_key, stats)
        else:
            draft = final_extractive_report(research)
            written = await asyncio.to_thread(self._audited, draft, cache_key)
        written.fidelity = with_research_phases(written.fidelity, research, researched_at)
        written.warnings = [*research.decomposition.warnings, *written.warnings]
        written.fidelity = {
            **written.fidelity,
            "warnings": [*research.decomposition.warnings, *written.fidelity.get("warnings", [])],
            "research": {
                **research.as_json(written.report),
                "document_digests": [
                    {"document_id": d, "digest_id": g, "snippets": n, "snippets_left_out": x}
                    for d, g, n, x in inputs.document_digests
                ],
            },
        }
        # A chosen source the report says nothing about is named, with why.
        missing = missing_sections(inputs.sources, units, ranked, written.report)
        if inputs.window_warnings or missing:  # window first: what no later step could see
            written.warnings = [*inputs.window_warnings, *written.warnings, *missing]
            written.fidelity = {
                **written.fidelity,
                "warnings": [
                    *inputs.window_warnings,
                    *written.fidelity.get("warnings", []),
                    *missing,
                ],
            }
        written.report = _scored(written.report, research, inputs)
        stats.update(written.audit.as_json())
        stats.pop("problems", None)
        if context.should_stop():
            raise Cancelled()
        await self._store(context, job, options, written)
        return Stored(written.status)

    def _cache_key(self, question: str, inputs: ReportInputs, writer: str) -> str:
        return report_cache_key(
            question,
            inputs.revisions,
            [(int(t.document_id), t.source_text_hash) for t in inputs.documents],
            {
                "min_overlap": self.min_overlap,
                "max_messages": self.max_messages,
                "decomposer": self.decomposer.version if self.decomposer else DECOMPOSER_VERSION,
            },
            writer,
            inputs.digests,
            [(document, digest) for document, digest, _, _ in inputs.document_digests],
        )

    async def _research(
        self, job: DigestJob, question: str, inputs: ReportInputs, context: JobContext
    ) -> Research:
        """Split the question (THREADING: it plans what is gathered), gather and merge the
        evidence of each sub-question and refine once (MAP: one step per sub-question, one for
        the refinement), each step shown on the job (`runner.reports.research`)."""
        stats = context.stats
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.THREADING)
        decomposition: Decomposition
        if self.decomposer is not None:
            usage = ExtractionUsage()
            decomposition = await self.decomposer.decompose(question, usage)
            stats["decompose_llm_calls"] = usage.llm_calls
        else:
            decomposition = rules_decomposition(question)
        sub_questions = decomposition.sub_questions
        stats.update({"sub_questions": len(sub_questions), "decomposition": decomposition.method})
        steps = len(sub_questions) + 1
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.MAP, 0, steps)
        units = await asyncio.to_thread(
            gather_evidence, inputs.channels, inputs.documents, inputs.claims
        )
        rankings = []
        for index, sub_question in enumerate(sub_questions):
            if context.should_stop():
                raise Cancelled()
            rankings.append(
                await asyncio.to_thread(rank_for_sub_question, sub_question, index, units)
            )
            async with context.pool.acquire() as connection:
                await report_progress(
                    connection, job.id, context.worker_id, JobPhase.MAP, index + 1, steps
                )
        gathered = Gathered(rankings, merge_rankings(rankings))
        pool = refinement_pool(units, inputs.documents, len(inputs.channels))
        research = await asyncio.to_thread(refine_gathered, decomposition, units, gathered, pool)
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.MAP, steps, steps)
        stats.update(
            {
                "evidence_gathered": len(gathered.merged),
                "open_points": len(research.points),
                "evidence_refined": len(research.added),
            }
        )
        return research

    def _audited(self, draft: Report, cache_key: str) -> Written:
        """The extractive report's audit (CPU-bound: run in a thread)."""
        report, audit = accept_sentences(draft, self.min_overlap)
        return Written(report, audit, EXTRACTOR_VERSION, cache_key)

    def _write_offline(
        self, question: str, ranked: list[RankedEvidence], cache_key: str
    ) -> Written:
        """The extractive report (CPU-bound: run in a thread)."""
        return self._audited(write_extractive_report(question, ranked), cache_key)

    async def _write_llm(
        self,
        job: DigestJob,
        question: str,
        ranked: list[RankedEvidence],
        inputs: ReportInputs,
        cache_key: str,
        stats: dict[str, Any],
    ) -> Written:
        """The LLM report, or the extractive one (PARTIAL, warned) when the model fails."""
        assert self.llm_writer is not None
        try:
            run = await self.llm_writer.write(question, ranked)
        except LLMError as error:
            logger.warning("report.llm_failed job_id=%s error=%s", job.id, type(error).__name__)
            key = self._cache_key(question, inputs, EXTRACTOR_VERSION)
            written = await asyncio.to_thread(self._write_offline, question, ranked, key)
            written.status = JobStatus.PARTIAL
            written.warnings.append(
                {
                    "code": "llm_writer_failed",
                    "message": (
                        f"the report model failed ({_why(error)}); the offline extractive report "
                        "was written instead"
                    ),
                }
            )
            if isinstance(error, EvidenceOverflow):  # what the fitting did, and why it stopped
                written.warnings[:0] = error.fit.warnings
                written.fidelity = error.fit.as_json()
            written.fidelity = {**written.fidelity, "warnings": list(written.warnings)}
            return written
        usage = run.usage
        stats.update(
            {
                "llm_calls": usage.llm_calls,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cached_tokens": usage.cached_tokens,
                "evidence_given": len(run.fit.units),
                "evidence_tokens": run.fit.tokens,
                "evidence_dropped": len(run.fit.dropped_content_ids),
            }
        )
        warnings = [*run.notes, *run.fit.warnings, *run.warnings]
        status = JobStatus.PARTIAL if run.warnings else JobStatus.SUCCEEDED
        writer = self.llm_writer.version_for(run.model)
        stats["model"] = run.model
        if writer != self.llm_writer.version:  # a fallback model's report: under its own key
            stats["writer"] = writer
            cache_key = self._cache_key(question, inputs, writer)
        return Written(
            run.report,
            run.audit,
            writer,
            cache_key,
            status,
            {**run.fit.as_json(), "warnings": warnings},
            warnings,
        )

    async def _store(
        self, context: JobContext, job: DigestJob, options: ReportOptions, written: Written
    ) -> None:
        """The report row and the job's end state, in one transaction."""
        report, audit = written.report, written.audit
        started = time.perf_counter()
        registry = report.registry()
        sections, sources = report_json(report, registry)
        markdown = report_markdown(report, registry)
        sources_seconds = time.perf_counter() - started
        values: dict[str, Any] = {
            "question": report.question,
            "request": options.request(),
            "cache_key": written.cache_key,
            "title": report.title,
            "sections": sections,
            "sources": sources,
            "markdown": markdown,
            "audit": audit.as_json(),
            "writer": written.writer,
            "fidelity": written.fidelity,
        }
        warnings = [
            {"code": f"sentence_dropped:{reason}", "message": f"{count} sentence(s) dropped"}
            for reason, count in sorted(audit.reasons.items())
        ]
        warnings += [{"code": w["code"], "message": w["message"]} for w in written.warnings]
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.STORE)
        async with context.pool.acquire() as connection, connection.transaction():
            report_id = await report_queries.insert_report(connection, job.id, values)
            end = Finished(written.status, report_id=report_id, warnings=warnings)
            await finish(connection, job.id, context.worker_id, end, context.stats)
        count_report(audit, sources_seconds)
        logger.info(
            "report.stored job_id=%s report_id=%s writer=%s sentences=%s sources=%s",
            job.id,
            report_id,
            written.writer,
            audit.kept,
            audit.sources,
        )


def _scored(report: Report, research: Research, inputs: ReportInputs) -> Report:
    """The report with each cited source's credibility and relevance
    (`runner.reports.source_scores`): relevance from every ranking of the research, each
    sub-question's and the refinement's."""
    ranked = [item for ranking in research.gathered.rankings for item in ranking]
    ranked += research.added
    scores = score_sources(
        report.registry(),
        ranked,
        inputs.document_facts,
        channel_facts(inputs.channels, inputs.claims),
    )
    return replace(report, scores=scores)


def _why(error: LLMError) -> str:
    """Why the writer failed, in our words (never the server's message nor a class name); an
    evidence overflow's own message names the remedy."""
    if isinstance(error, EvidenceOverflow):
        return str(error)[:300]
    return failure_reason(error)
