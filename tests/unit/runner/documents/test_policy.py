"""Digest policy (off / auto / always), batch selection order, config validation, and cache keys
that miss on any change of query, content, config, summarizer or version."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from runner.core.extractor import PipelineWarning
from runner.documents.cache_key import DIGEST_IMPL_VERSION, digest_cache_key, query_hash
from runner.documents.canonical import source_text_hash
from runner.documents.ingest import ingest_text
from runner.documents.policy import (
    DigestCandidate,
    DigestConfig,
    DigestPolicy,
    SourceQuality,
    check_eligibility,
    choose_documents,
    estimate_quality,
    select_for_digest,
)

BIG, SMALL = 12_000, 3_000


def test_seed_defaults() -> None:
    config = DigestConfig()
    assert (config.policy, config.min_chars, config.max_sources, config.max_concurrent) == (
        DigestPolicy.AUTO,
        10_000,
        8,
        3,
    )
    assert (config.include_evidence, config.evidence_max_chars, config.max_evidence_snippets) == (
        True,
        400,
        5,
    )
    assert config.per_source_timeout == config.timeout / 3


@pytest.mark.parametrize(
    ("policy", "chars", "quality", "is_digest", "eligible", "reason"),
    [
        ("off", BIG, SourceQuality.HIGH, False, False, "policy_off"),
        ("auto", BIG, SourceQuality.HIGH, False, True, "eligible"),
        ("auto", BIG, SourceQuality.MEDIUM, False, True, "eligible"),
        ("auto", BIG, SourceQuality.LOW, False, False, "low_quality"),
        ("auto", BIG, SourceQuality.UNKNOWN, False, False, "low_quality"),
        ("auto", SMALL, SourceQuality.HIGH, False, False, "too_small"),
        ("auto", BIG, SourceQuality.HIGH, True, False, "already_digested"),
        ("always", SMALL, SourceQuality.LOW, False, True, "eligible"),
        ("always", 0, SourceQuality.HIGH, False, False, "no_content"),
        ("always", BIG, SourceQuality.HIGH, True, False, "already_digested"),
    ],
)
def test_eligibility(
    policy: str, chars: int, quality: SourceQuality, is_digest: bool, eligible: bool, reason: str
) -> None:
    candidate = DigestCandidate("s1", chars, quality, is_digest)
    verdict = check_eligibility(candidate, DigestConfig(policy=DigestPolicy(policy)))
    assert (verdict.eligible, verdict.reason) == (eligible, reason)


def test_selection_ranks_raw_content_then_takes_the_first_eligible() -> None:
    candidates = [
        DigestCandidate("d", BIG, SourceQuality.MEDIUM, relevance=0.9),
        DigestCandidate("a", BIG, SourceQuality.HIGH, relevance=0.2),
        DigestCandidate("c", BIG * 2, SourceQuality.HIGH, relevance=0.2),
        DigestCandidate("b", BIG, SourceQuality.HIGH, relevance=0.2),
        DigestCandidate("e", SMALL, SourceQuality.HIGH, relevance=1.0),  # too small for auto
        DigestCandidate("f", BIG, SourceQuality.HIGH, relevance=0.8, is_digest=True),
    ]
    chosen = select_for_digest(candidates, DigestConfig(max_sources=3))
    assert [c.source_id for c in chosen] == ["c", "a", "b"]
    everything = select_for_digest(candidates, DigestConfig(policy=DigestPolicy.ALWAYS))
    assert [c.source_id for c in everything] == ["e", "c", "a", "b", "d"]


@pytest.mark.parametrize(
    "changes",
    [
        {"evidence_max_chars": 501},
        {"max_evidence_snippets": 11},
        {"max_sources": 0},
        {"timeout": 0},
        {"policy": "sometimes"},
    ],
)
def test_invalid_config_is_refused(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        DigestConfig(**changes)  # type: ignore[arg-type]


def test_quality_of_an_ingested_document() -> None:
    assert estimate_quality([]) == SourceQuality.MEDIUM
    assert estimate_quality([PipelineWarning("pdf_sparse_text", "x")]) == SourceQuality.LOW


TEXT_HASH = source_text_hash("the canonical text")


def _key(**changes: object) -> str:
    arguments: dict[str, object] = {
        "source_id": "doc-1",
        "source_text_hash": TEXT_HASH,
        "query": "what changed?",
        "config": DigestConfig(),
        "summarizer_fingerprint": "offline-extractive:1",
    }
    arguments.update(changes)
    return digest_cache_key(**arguments)  # type: ignore[arg-type]


def test_cache_key_format() -> None:
    key = _key()
    match = re.fullmatch(r"digest:([^:]+):([^:]+):([0-9a-f]{16}):([0-9a-f]{8}):([0-9a-f]{8})", key)
    assert match is not None
    assert match.group(1) == DIGEST_IMPL_VERSION and match.group(2) == "doc-1"
    assert match.group(3) == TEXT_HASH.split(":")[1][:16]
    assert match.group(4) == query_hash("what changed?")[:8]
    assert _key() == key  # deterministic


def test_cache_key_misses_on_every_change() -> None:
    base = _key()
    variants = [
        _key(query="what stayed the same?"),
        _key(source_text_hash=source_text_hash("the canonical text, edited")),
        _key(config=replace(DigestConfig(), max_evidence_snippets=3)),
        _key(config=replace(DigestConfig(), policy=DigestPolicy.ALWAYS)),
        _key(config=replace(DigestConfig(), evidence_max_chars=300)),
        _key(summarizer_fingerprint="llm:gpt-4o-mini:doc-digest-1"),
        _key(impl_version="1.1"),
        _key(source_id="doc-2"),
    ]
    assert base not in variants and len(set(variants)) == len(variants)
    # Cosmetic whitespace in a query is the same query.
    assert _key(query="  what   changed? ") == base
    # Settings outside the config tuple (`hash_inputs`) do not change digests, so they keep the key.
    assert _key(config=replace(DigestConfig(), timeout=30.0, max_concurrent=6)) == base


def test_choose_documents_ranks_raw_text_and_says_why_the_rest_are_left_out() -> None:
    documents = [
        (1, ingest_text(" ".join(["Gardening notes on soil and water."] * 40))),
        (2, ingest_text(" ".join(["Load tests run nightly on staging."] * 40))),
        (3, ingest_text("Load tests run.")),
        (4, ingest_text(" ".join(["Load tests need clear ownership."] * 40))),
    ]
    config = DigestConfig(min_chars=1000, max_sources=2)
    choice = choose_documents(documents, "How are load tests run?", config)
    assert choice.chosen == [2, 4]  # all three terms, then two of them
    assert choice.skipped == [(1, "max_sources"), (3, "too_small")]
    # Deterministic: the same input in another order gives the same choice.
    assert choose_documents(documents[::-1], "How are load tests run?", config).chosen == [2, 4]
