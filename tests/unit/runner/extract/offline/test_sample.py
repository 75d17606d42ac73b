"""The offline extractor on the bundled sample channel, through the real pipeline and validator:
what `digestd demo` shows must be grounded, deterministic and say the right things."""

from __future__ import annotations

import pytest

from runner.core.chunks import chunk_messages
from runner.core.contract import (
    ActionItem,
    Artifact,
    ArtifactKind,
    ChunkSummary,
    ContentPointer,
    Digest,
    KnowledgeKind,
    SignalLevel,
)
from runner.core.window import Window
from runner.digests.pipeline import PipelineResult, run_pipeline
from runner.extract.offline import OFFLINE_VERSION, OfflineExtractor
from runner.grounding.pointers import MatchKind
from runner.grounding.validate import validate_output
from tests.support.contract import content_of, pointer_of, quote_of
from tests.support.offline import CHUNK_TOKENS, load_sample, run_offline


@pytest.fixture(scope="module")
def window() -> Window:
    return load_sample()


@pytest.fixture(scope="module")
async def result(window: Window) -> PipelineResult:
    return await run_offline(window)


@pytest.fixture(scope="module")
def digest(result: PipelineResult) -> Digest:
    return result.digest


def _texts(window: Window) -> dict[str, str]:
    return {m.message_id: m.normalized_text for m in window.messages}


def _pointers(output: ChunkSummary | Digest) -> list[ContentPointer]:
    pointers = [a.pointer for a in output.artifacts]
    pointers += [k.content_pointer for k in output.knowledge_items if k.content_pointer]
    return pointers


def test_sample_shape(window: Window) -> None:
    assert 60 <= len(window.messages) <= 90
    assert window.channel_name == "team-platform"
    days = {m.ts.date() for m in window.messages}
    assert len(days) == 2
    assert any(not m.author.isascii() for m in window.messages)
    assert [m.ts for m in window.messages] == sorted(m.ts for m in window.messages)


def test_nothing_rejected_and_pointers_exact(window: Window, result: PipelineResult) -> None:
    assert result.map_rejections == []
    assert result.validation.rejections == []
    assert result.validation.output_flags == []
    assert result.failed_chunks == []
    texts = _texts(window)
    digest = result.digest
    assert _pointers(digest)
    for pointer in _pointers(digest):
        assert texts[pointer.message_id][pointer.char_start : pointer.char_end] == pointer.quote
    # Offsets were exact: nothing had to be re-anchored from the quote.
    for kinds in result.validation.pointer_matches.values():
        assert all(kind in (None, MatchKind.OFFSETS) for kind in kinds)


async def test_chunk_summaries_are_valid_on_their_own(window: Window) -> None:
    extractor = OfflineExtractor()
    texts = _texts(window)
    chunks = chunk_messages(list(window.messages), CHUNK_TOKENS)
    assert len(chunks) > 1
    for chunk in chunks:
        summary = await extractor.extract_chunk(chunk, [])
        chunk_texts = {mid: texts[mid] for mid in chunk.message_ids}
        checked = validate_output(summary, chunk_texts)
        assert checked.rejections == [] and checked.output_flags == []
        for pointer in _pointers(summary):
            assert chunk_texts[pointer.message_id][pointer.char_start : pointer.char_end] == (
                pointer.quote
            )
        keys = [k.key for k in summary.knowledge_items]
        assert len(keys) == len(set(keys))
        assert summary.chunk_summary.startswith(f"Covers {len(chunk.message_ids)} messages")
    assert extractor.usage.llm_calls == 0
    assert OFFLINE_VERSION in extractor.fingerprint()


async def test_deterministic(window: Window, digest: Digest) -> None:
    again = await run_offline(window)
    assert again.digest.model_dump_json() == digest.model_dump_json()
    concurrent = await run_pipeline(
        window, OfflineExtractor(), chunk_tokens=CHUNK_TOKENS, concurrency=4
    )
    assert concurrent.digest.model_dump_json() == digest.model_dump_json()


def test_decisions(digest: Digest) -> None:
    texts = {d.text: d.message_ids for d in digest.decisions}
    retry = next(t for t in texts if "exponential backoff" in t)
    # The `[agreed]` marker's wording (marker stripped), citing the proposal and the "+1" it
    # refined too: one decision, not the proposal and its final form twice.
    assert texts[retry] == ["m007", "m009", "m010"]
    assert retry.startswith("Retry the ingest batch fetch")
    assert sum("exponential backoff" in t for t in texts) == 1
    branch = next(t for t in texts if "release branch" in t)
    assert texts[branch][:3] == ["m031", "m032", "m033"]  # proposal + two agreeing replies
    assert any("Postgres 16 on March 25" in t for t in texts)
    # Proposals nobody agreed to, and hedged or negated phrasing, are not decisions.
    assert not any("jitter so the workers" in t for t in texts)


def test_action_items(digest: Digest) -> None:
    actions = {a.text: a for a in digest.action_items}

    def find(fragment: str) -> ActionItem:
        return next(a for t, a in actions.items() if fragment in t)

    assert find("PR for the retry wrapper").owner == "Björn Lindqvist"  # "I'll ..."
    assert find("alert rule").owner == "Zoë Dubois"  # "@Zoë can you ...", taken with "on it"
    assert find("alert rule").message_ids == ["m015", "m016"]
    assert find("changelog and post").owner == "Priya Raman"
    assert find("on-call runbook").owner == "Marcus Lee"  # "Marcus will ..."
    assert find("python:3.12-slim").owner is None  # TODO without an owner
    assert find("Review the changelog PR").owner == "Björn Lindqvist"  # "I'll take it"
    assert find("rerun the load test").owner == "Kenji Watanabe"  # "#action Kenji to ..."
    assert find("production upgrade plan").owner == "Marcus Lee"


def test_open_questions_are_the_unanswered_ones(digest: Digest) -> None:
    asked = {q.message_ids[0] for q in digest.open_questions}
    # Unanswered: maintenance window, flaky test ("no idea" is no answer), pg_stat_statements,
    # migrations in the deploy pipeline.
    assert {"m027", "m038", "m054", "m063"} <= asked
    # Answered by a reply, by the person asked, or by the next message on the same subject.
    assert not asked & {"m005", "m021", "m023", "m057", "m059"}
    question = next(q for q in digest.open_questions if q.message_ids == ["m054"])
    assert question.asked_by == "Zoë Dubois"
    assert "pg_stat_statements" in question.text


def test_answered_questions_become_knowledge(digest: Digest) -> None:
    qa = {tuple(k.message_ids): k for k in digest.knowledge_items if k.content}
    pgvector = qa[("m023", "m024")]
    assert pgvector.kind == KnowledgeKind.TROUBLESHOOTING
    assert content_of(pgvector).startswith("Q: Is the pgvector extension compatible")
    assert "pgvector 0.6.0 supports Postgres 16" in content_of(pgvector)
    assert pgvector.context_version and "16" in pgvector.context_version


def test_links(digest: Digest) -> None:
    urls = {link.url: link for link in digest.links}
    assert "https://github.com/example-org/ingest/pull/1187" in urls
    assert "https://www.postgresql.org/docs/16/pgupgrade.html" in urls
    grafana = next(u for u in urls if u.startswith("https://grafana.internal.example/"))
    assert grafana.endswith("viewPanel=12")  # query string kept, no trailing punctuation
    pr = urls["https://github.com/example-org/ingest/pull/1187"]
    assert pr.message_ids == ["m044"]
    assert "with_backoff()" in pr.description
    assert len(urls) == len(digest.links)


def test_artifacts_and_verbatim_knowledge(window: Window, digest: Digest) -> None:
    by_kind: dict[ArtifactKind, list[Artifact]] = {}
    for artifact in digest.artifacts:
        by_kind.setdefault(artifact.kind, []).append(artifact)
    code = by_kind[ArtifactKind.CODE][0]
    assert code.language == "python" and code.pointer.message_id == "m011"
    assert quote_of(code.pointer).startswith("import asyncio") and "```" not in quote_of(
        code.pointer
    )
    configs = {a.pointer.message_id: a for a in by_kind[ArtifactKind.CONFIG]}
    assert configs["m013"].language == "yaml" and "max_attempts: 5" in quote_of(
        configs["m013"].pointer
    )
    assert configs["m056"].language == "ini"
    commands = {a.pointer.message_id: quote_of(a.pointer) for a in by_kind[ArtifactKind.COMMAND]}
    # The three `$ ...` lines of one procedure are one pointer.
    assert commands["m022"].count("$ ") == 3
    assert commands["m050"] == "vacuumdb --all --analyze-in-stages"
    verbatim = [k for k in digest.knowledge_items if k.content_pointer]
    assert {k.kind for k in verbatim} >= {
        KnowledgeKind.CODE,
        KnowledgeKind.CONFIG,
        KnowledgeKind.COMMAND,
    }
    upgrade = next(k for k in verbatim if pointer_of(k).message_id == "m022")
    assert upgrade.context_version == "Postgres 16"
    # The re-posted rate limiter config replaces the first one.
    first = next(k for k in verbatim if pointer_of(k).message_id == "m056")
    updated = next(k for k in verbatim if pointer_of(k).message_id == "m068")
    assert updated.supersedes_id == first.key and first.supersedes_id is None


def test_version_specific_tips(digest: Digest) -> None:
    tips = {
        content_of(k): k for k in digest.knowledge_items if k.kind == KnowledgeKind.RECOMMENDATION
    }
    python = next(k for c, k in tips.items() if "utcnow()" in c)
    assert python.context_version == "Python 3.12" and python.message_ids == ["m047"]
    postgres = next(k for c, k in tips.items() if "ANALYZE" in c)
    assert postgres.context_version == "Postgres 16"
    assert not any(c.startswith("Tip:") for c in tips)  # the marker is not part of the tip


def test_knowledge_keys_and_limits(digest: Digest) -> None:
    keys = [k.key for k in digest.knowledge_items]
    assert keys == [f"K{i}" for i in range(1, len(keys) + 1)]
    assert len(digest.highlights) <= 5 and len(digest.search_keywords) <= 10
    assert len(digest.title) <= 120 and len(digest.overview) <= 12
    Digest.model_validate(digest.model_dump())  # every contract limit holds


def test_overview_title_topics_coverage(window: Window, digest: Digest) -> None:
    ids = {m.message_id for m in window.messages}
    assert digest.signal_quality.level == SignalLevel.HIGH
    assert digest.title.startswith("team-platform: ")
    titles = [t.title for t in digest.topics]
    assert "Postgres 16" in titles[:3]
    assert any("retry" in t.casefold() for t in titles[:3])
    # Small talk is no topic.
    assert not any(word in " ".join(titles).casefold() for word in ("lunch", "coffee", "weather"))
    authors = {m.author for m in window.messages}
    overview = digest.overview_text()
    # Discussed (topics, central messages with their authors), decided, left open; every
    # sentence cites messages of the window.
    assert digest.overview[0].sentence.startswith("The discussion was mainly about ")
    assert sum(any(s.sentence.startswith(f"{a}: ") for a in authors) for s in digest.overview) >= 2
    assert any(s.sentence.startswith("Decided: ") for s in digest.overview)
    assert all(s.message_ids and set(s.message_ids) <= ids for s in digest.overview)
    assert "ramen" not in overview
    coverage = digest.coverage
    assert (coverage.messages_total, coverage.messages_covered) == (70, 70)
    assert (coverage.first_message_id, coverage.last_message_id) == ("m001", "m070")
    assert digest.highlights[0].sentence.startswith("Decision: ")
    assert "postgres 16" in digest.search_keywords
    assert set(digest.notable_message_ids) <= ids
