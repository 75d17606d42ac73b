"""The LLM report writer against a fake OpenAI-compatible model (the real `openai` client over
the fake endpoint in-process, `runner.evaluation.fake_report_model`): what the model is sent,
the one re-ask with the concrete audit errors, and that fabricated source ids and sentences
citing unrelated messages are never stored as cited."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runner.core.fidelity import (
    FIDELITY_SCHEMA_VERSION,
    PHASE_FINAL_FIT,
    PHASE_SYNTHESIS,
    SYNTHESIS_BUDGET_SHARE,
)
from runner.documents.archive import read_archive
from runner.evaluation.fake_report_model import (
    fake_report_writer,
    quoting_answer,
    report_model,
    request_sources,
)
from runner.llm.budget import count_request_tokens, request_pieces
from runner.llm.fake import FakeLLM, char_tokenizer, error
from runner.llm.toolcall import MalformedOutput, RequestTooLarge
from runner.reports.evidence import (
    ChannelMessage,
    DigestClaim,
    RankedEvidence,
    gather_evidence,
    rank_evidence,
)
from runner.reports.evidence_budget import content_id, priority_order
from runner.reports.llm_writer import (
    EVIDENCE_ARCHIVE_SOURCE,
    REPORT_TOOL,
    EvidenceOverflow,
    build_messages,
    report_tool_schema,
)
from runner.reports.report import report_markdown
from runner.reports.sources import MessageSource
from tests.support.reports import (
    FABRICATED,
    GOOD,
    OPS,
    QUESTION,
    UNRELATED,
    assert_audited,
    bad_answer,
    id_of,
)

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def ranked_evidence(rows: list[tuple[str, str]] = OPS) -> list[RankedEvidence]:
    channel = [
        ChannelMessage("ops", f"m{i}", 1, author, T0 + timedelta(minutes=i), text, i + 1)
        for i, (author, text) in enumerate(rows)
    ]
    return rank_evidence(QUESTION, gather_evidence([channel], []))


def fixed_answer(body: dict[str, Any]) -> dict[str, Any]:
    plan = "The rollback plan of every database migration is written in the runbook."
    return {
        "title": "Database migration rollbacks",
        "answer": [{"sentence": GOOD, "source_ids": [id_of(body, GOOD)]}],
        "sections": [
            {
                "heading": "Where it is written",
                "sentences": [
                    {"sentence": plan, "source_ids": [id_of(body, plan)]},
                ],
            }
        ],
        "open_points": [],
    }


def sequence(*answers: Any) -> FakeLLM:
    """A fake answering its n-th request with the n-th builder (the last one repeats)."""
    calls = 0

    def respond(body: dict[str, Any]) -> Any:
        nonlocal calls
        answer = answers[min(calls, len(answers) - 1)]
        calls += 1
        return answer(body) if callable(answer) else answer

    return FakeLLM(report_model(respond))


async def test_a_faithful_answer_is_kept_whole_with_one_request_and_no_re_ask() -> None:
    writer, model = fake_report_writer()
    ranked = ranked_evidence()
    run = await writer.write(QUESTION, ranked)
    (body,) = model.requests
    assert body["tool_choice"]["function"]["name"] == REPORT_TOOL
    user = body["messages"][1]["content"]
    assert f"Question: {QUESTION}" in user
    assert [t for _, t in request_sources(body)] == [
        r.evidence.text for r in priority_order(ranked)
    ]
    assert [i for i, _ in request_sources(body)] == [f"E{n}" for n in range(1, len(ranked) + 1)]
    assert run.audit.re_asked == 0 and run.audit.dropped == 0 and run.audit.kept >= 3
    assert_audited(run.report, report_markdown(run.report))
    assert run.report.title == "How are database migration rollbacks approved"
    assert run.usage.llm_calls == 1


async def test_fabricated_ids_and_unrelated_citations_are_re_asked_once_then_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    model = sequence(bad_answer)  # the model repeats its mistakes when re-asked
    writer, _ = fake_report_writer(model)
    run = await writer.write(QUESTION, ranked_evidence())
    assert len(model.requests) == 2, "exactly one re-ask"
    reask = model.requests[1]["messages"]
    assert reask[:2] == model.requests[0]["messages"]  # the static prefix is unchanged
    assert (
        reask[2]["role"] == "assistant"
        and reask[2]["tool_calls"][0]["function"]["name"] == REPORT_TOOL
    )
    errors = reask[3]["content"]
    assert reask[3]["role"] == "tool"
    assert "sentence 2" in errors and "unknown_source, ids: E99" in errors
    schedule = id_of(
        model.requests[0], "The database migration runs on Friday evening after the freeze."
    )
    assert "sentence 3" in errors and f"low_support, ids: {schedule}" in errors
    assert "sentence 1 " not in errors  # the good sentence is not sent back
    texts = [s.sentence for s in run.report.sentences()]
    assert texts == [GOOD]
    assert FABRICATED not in report_markdown(run.report)
    assert UNRELATED not in report_markdown(run.report)
    assert run.audit.re_asked == 2 and run.audit.proposed == 3 and run.audit.kept == 1
    assert dict(run.audit.reasons) == {"unknown_source": 1, "low_support": 1}
    assert_audited(run.report, report_markdown(run.report))
    # Model text is untrusted: the logs carry counts and codes, never its sentences.
    assert FABRICATED not in caplog.text and UNRELATED not in caplog.text


async def test_a_corrected_second_answer_is_kept() -> None:
    model = sequence(bad_answer, fixed_answer)
    writer, _ = fake_report_writer(model)
    run = await writer.write(QUESTION, ranked_evidence())
    assert len(model.requests) == 2
    assert run.audit.re_asked == 2 and run.audit.dropped == 0 and run.audit.kept == 2
    assert [s.heading for s in run.report.sections if s.sentences] == [
        "Answer",
        "Where it is written",
    ]
    assert run.report.title == "Database migration rollbacks"  # its words are in what it cites
    for sentence in run.report.sentences():
        (source,) = sentence.sources
        assert isinstance(source, MessageSource) and source.quote == sentence.sentence


async def test_a_failing_re_ask_keeps_the_audited_first_answer_with_a_warning() -> None:
    down = error(500, "overloaded")
    model = sequence(bad_answer, down)
    writer, _ = fake_report_writer(model)
    run = await writer.write(QUESTION, ranked_evidence())
    assert len(model.requests) == 2
    assert [s.sentence for s in run.report.sentences()] == [GOOD]
    assert [w["code"] for w in run.warnings] == ["re_ask_failed"]


async def test_an_invented_title_is_replaced_by_the_question() -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return {**quoting_answer(body), "title": "Quarterly revenue projections for investors"}

    writer, _ = fake_report_writer(FakeLLM(report_model(answer)))
    run = await writer.write(QUESTION, ranked_evidence())
    assert run.report.title == "How are database migration rollbacks approved"


async def test_garbage_twice_raises_for_the_job_to_fall_back() -> None:
    writer, model = fake_report_writer(FakeLLM(report_model(lambda body: {"title": 5})))
    with pytest.raises(MalformedOutput):
        await writer.write(QUESTION, ranked_evidence())
    assert len(model.requests) == 2  # the schema re-ask of the tool-call path, once


async def test_evidence_beyond_the_model_budget_is_dropped_and_not_sent() -> None:
    rows = [
        (
            f"user{i}",
            f"The database migration rollback step {i} is approved after review "
            f"number {i} of the plan.",
        )
        for i in range(200)
    ]
    ranked = ranked_evidence(rows)
    writer, model = fake_report_writer(reduce_context_tokens=8000)
    run = await writer.write(QUESTION, ranked)
    fit = run.fit
    assert [w["code"] for w in fit.warnings] == ["CONTENT_DROPPED", "CONTENT_DROPPED"]
    assert fit.fidelity[0]["reason"] == "unit_cap" and fit.fidelity[-1]["step"] == "drop"
    sent = [t for _, t in request_sources(model.requests[0])]
    assert len(sent) == len(fit.units) < 60
    assert len(fit.dropped_content_ids) == len(ranked) - len(sent)
    given = {content_id(u.evidence) for u in fit.units}
    assert given.isdisjoint(fit.dropped_content_ids)
    assert fit.tokens <= fit.budget_tokens == writer.evidence_budget(QUESTION)
    # The highest priority (`priority_order`) is what is given, in that order.
    assert sent == [r.evidence.text for r in priority_order(ranked)[: len(sent)]]
    assert sent[: len(sent) // 2] != [r.evidence.text for r in ranked[: len(sent) // 2]]


async def test_the_synthesis_share_caps_the_evidence_at_85_percent_of_the_budget() -> None:
    # A large context: the request less its fixed part would leave evidence over 85% of the
    # effective input budget; the synthesis phase's share keeps the rest for the request.
    rows = [
        (f"user{i}", f"The database migration rollback step {i} is approved after review {i}.")
        for i in range(100)
    ]
    writer, model = fake_report_writer(reduce_context_tokens=64000)
    effective = writer.call.budget().input_tokens
    static, _ = count_request_tokens(build_messages(QUESTION, []), [report_tool_schema()])
    share = int(effective * SYNTHESIS_BUDGET_SHARE)
    assert SYNTHESIS_BUDGET_SHARE == 0.85 and writer.request_limit() - static > share
    assert writer.evidence_budget(QUESTION) == share
    run = await writer.write(QUESTION, ranked_evidence(rows))
    assert run.fit.tokens <= run.fit.budget_tokens <= share
    assert run.fit.as_json()["phase_budget_share"] == 0.85
    assert run.fit.as_json()["phase_budget_tokens"] == share
    sent, _ = count_request_tokens(model.requests[0]["messages"], [report_tool_schema()])
    assert sent <= writer.request_limit()


async def test_citing_a_digest_claim_cites_every_message_it_rests_on() -> None:
    claim = DigestClaim(
        "decision",
        "Database migration rollbacks are approved by the on-call lead from now on.",
        ("m2", "m4"),
    )
    channel = [
        ChannelMessage("ops", f"m{i}", 1, author, T0 + timedelta(minutes=i), text, i + 1)
        for i, (author, text) in enumerate(OPS)
    ]
    ranked = rank_evidence(QUESTION, gather_evidence([channel], [], [[claim]]))
    writer, model = fake_report_writer()
    run = await writer.write(QUESTION, ranked)
    shown = model.requests[0]["messages"][1]["content"]
    assert 'kind="decision"' in shown
    (sentence,) = [s for s in run.report.sentences() if s.sentence == claim.text]
    assert [s.message_id for s in sentence.sources if isinstance(s, MessageSource)] == ["m2", "m4"]
    unit = next(r.evidence for r in ranked if r.evidence.kind == "decision")
    assert content_id(unit).startswith("decision:") and content_id(unit).endswith(
        "message:ops:m2@1"
    )


async def test_the_re_ask_is_one_llama_cpp_python_takes() -> None:
    """llama-cpp-python's server answers an assistant message whose content is null with a 500
    (its request model wants a string): the re-ask's echo of the model's call carries ""."""
    answers = sequence(bad_answer, fixed_answer)

    def strict(body: dict[str, Any]) -> Any:
        if any(m["role"] == "assistant" and m.get("content") is None for m in body["messages"]):
            return error(500, "1 validation error: messages.2.content: Input should be a string")
        return answers.model(body)

    model = FakeLLM(strict)
    writer, _ = fake_report_writer(model)
    run = await writer.write(QUESTION, ranked_evidence())
    assert len(model.requests) == 2
    assert run.warnings == [] and run.audit.kept == 2


def _long_rows(count: int) -> list[tuple[str, str]]:
    return [
        (
            f"user{i}",
            f"The database migration rollback step {i} is approved after review "
            f"number {i} of the plan.",
        )
        for i in range(count)
    ]


async def test_the_whole_request_is_counted_and_fitted_within_the_limit_before_it_is_sent() -> None:
    ranked = ranked_evidence(_long_rows(200))
    writer, model = fake_report_writer(reduce_context_tokens=8000)
    run = await writer.write(QUESTION, ranked)
    sent, _ = count_request_tokens(model.requests[0]["messages"], [report_tool_schema()])
    # The re-ask's room is kept: the first request is within the budget less that room.
    assert sent <= writer.request_limit() < writer.call.budget().input_tokens
    assert len(run.fit.units) >= 3


async def test_a_request_still_over_after_two_final_fits_is_refused_unsent() -> None:
    ranked = ranked_evidence(_long_rows(200))
    # 4,700 tokens of context leave the evidence less than its 512-token floor: every
    # re-assembly is over the limit by the same amount.
    writer, model = fake_report_writer(reduce_context_tokens=5000)
    with pytest.raises(EvidenceOverflow, match="after 2 final-fit passes") as raised:
        await writer.write(QUESTION, ranked)
    assert model.requests == []
    assert "TOKEN_BUDGET_FLOORED" in [w["code"] for w in raised.value.fit.warnings]


async def test_without_token_management_the_ranked_evidence_is_sent_whole_without_records() -> None:
    ranked = ranked_evidence(_long_rows(30))
    writer, model = fake_report_writer(token_management_enabled=False)
    run = await writer.write(QUESTION, ranked)
    assert [t for _, t in request_sources(model.requests[0])] == [
        r.evidence.text for r in priority_order(ranked)
    ]
    assert run.fit.content_fidelity == {} and run.fit.fidelity == [] and run.fit.warnings == []
    # The stored form keeps every field, empty: one shape whatever the setting.
    assert run.fit.as_json() == {
        "budget_tokens": run.fit.tokens,
        "fidelity": [],
        "warnings": [],
        "dropped_content_ids": [],
        "content_fidelity_schema_version": FIDELITY_SCHEMA_VERSION,
        "content_fidelity": {},
        "content_archive_hashes": {},
    }
    assert writer.version.endswith(":unbudgeted")
    # And a request over the budget is then refused by the preflight, not fitted.
    small, _ = fake_report_writer(token_management_enabled=False, reduce_context_tokens=5000)
    with pytest.raises(RequestTooLarge):
        await small.write(QUESTION, ranked_evidence(_long_rows(200)))


async def test_without_dropping_nothing_is_left_out_for_the_budget() -> None:
    rows = [
        (f"user{i}", f"The database migration rollback step {i} is approved after review " * 4)
        for i in range(12)
    ]
    dropping, _ = fake_report_writer(reduce_context_tokens=8000)
    assert (await dropping.write(QUESTION, ranked_evidence(rows))).fit.dropped_content_ids
    writer, model = fake_report_writer(reduce_context_tokens=8000, allow_content_dropping=False)
    run = await writer.write(QUESTION, ranked_evidence(rows))
    assert run.fit.dropped_content_ids == [] and len(run.fit.units) == 12
    assert "CONTENT_DROPPED" not in [w["code"] for w in run.fit.warnings]
    assert "condensed" in {u.level.value for u in run.fit.units}
    assert len(request_sources(model.requests[0])) == 12
    assert writer.version.endswith(":nodrop")


async def test_the_whole_text_of_cut_or_dropped_units_is_archived_with_its_hash(
    tmp_path: Path,
) -> None:
    ranked = ranked_evidence(_long_rows(200))
    writer, _ = fake_report_writer(reduce_context_tokens=8000)
    writer.archive_dir = tmp_path
    run = await writer.write(QUESTION, ranked)
    hashes = run.fit.content_archive_hashes
    degraded = run.fit.degraded_texts()
    assert degraded and set(hashes) == set(degraded)
    for item_id, digest in hashes.items():
        text = read_archive(tmp_path, EVIDENCE_ARCHIVE_SOURCE, digest)
        assert text == degraded[item_id]
        assert run.fit.content_fidelity[item_id]["phases"]["synthesis"]["archive_hash"] == digest


async def test_an_archive_that_cannot_be_written_is_archive_write_failed_not_a_failed_report(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the archive directory should be")
    writer, _ = fake_report_writer(reduce_context_tokens=8000)
    writer.archive_dir = blocker / "archive"
    run = await writer.write(QUESTION, ranked_evidence(_long_rows(200)))
    assert run.fit.degraded_texts(), "the budget must cut or drop something to archive"
    failed = [w for w in run.fit.warnings if w["code"] == "ARCHIVE_WRITE_FAILED"]
    assert len(failed) == 1
    assert failed[0]["phase"] == "synthesis"
    assert "could not be written" in failed[0]["message"]
    assert run.fit.content_archive_hashes == {}
    assert run.report.sections  # the report is still written


def test_a_final_fit_keeps_the_first_fitting_as_history_and_ends_as_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An evidence budget that forgets the request's static part makes the first assembly over
    the limit: the final fit fits it again, and each unit's record keeps both phases."""
    ranked = ranked_evidence(_long_rows(200))
    writer, _ = fake_report_writer(reduce_context_tokens=8000)
    monkeypatch.setattr(writer, "evidence_budget", lambda question: writer.request_limit())
    fit, _ = writer.fitted_request(QUESTION, ranked)
    (step,) = [r for r in fit.fidelity if r["step"] == "final_fit"]
    assert step["iterations"] >= 1
    records = fit.content_fidelity
    assert records and all(
        list(r["phases"]) == [PHASE_SYNTHESIS, PHASE_FINAL_FIT] for r in records.values()
    )
    given = {content_id(u.evidence): u for u in fit.units}
    for item_id, record in records.items():
        final = record["phases"][PHASE_FINAL_FIT]
        unit = given.get(item_id)
        assert final["level"] == (unit.level.value if unit else "dropped")
        assert final["final_tokens"] == (unit.tokens if unit else 0)
    # The first fitting gave the model more than the last: its records say so.
    first = sum(r["phases"][PHASE_SYNTHESIS]["final_tokens"] for r in records.values())
    last = sum(r["phases"][PHASE_FINAL_FIT]["final_tokens"] for r in records.values())
    assert first > last
    # What is archived is what the unit ended as (its final-fit level).
    assert set(fit.degraded_texts()) == {
        item_id for item_id, r in records.items() if r["phases"][PHASE_FINAL_FIT]["level"] != "full"
    }


# llama.cpp's server as its /v1/models says so (tools/server: owned_by "llamacpp").
LLAMA_CPP = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]}


async def test_evidence_over_the_limit_by_the_servers_own_count_is_fitted_again() -> None:
    """A llama.cpp server whose tokenizer counts one token per character: the evidence fitted
    by cl100k_base is over the limit by its count, so it is fitted again to the share the two
    counts leave, and the request sent fits by the server's count."""
    endpoint = FakeLLM(report_model(), {"/v1/models": LLAMA_CPP}, {"/tokenize": char_tokenizer(1)})
    writer, model = fake_report_writer(endpoint, reduce_context_tokens=16_000)
    run = await writer.write(QUESTION, ranked_evidence(_long_rows(200)))
    limit = writer.request_limit()
    overhead, pieces = request_pieces(model.requests[0]["messages"], [report_tool_schema()])
    assert overhead + sum(len(piece) for piece in pieces) <= limit
    (step,) = [r for r in run.fit.fidelity if r["reason"] == "server_tokenizer"]
    assert step["original_tokens"] > limit >= step["final_tokens"] > 0
    records = run.fit.content_fidelity.values()
    assert records and all(PHASE_FINAL_FIT in r["phases"] for r in records)
    given = sum(1 for r in records if r["phases"][PHASE_FINAL_FIT]["level"] != "dropped")
    assert (
        given
        == len(run.fit.units)
        < sum(1 for r in records if r["phases"][PHASE_SYNTHESIS]["level"] != "dropped")
    )
    assert run.warnings == [] and run.audit.kept >= 1
