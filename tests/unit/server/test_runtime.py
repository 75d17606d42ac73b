"""The composition root reads every document digest setting: each DIGESTD_DOC_* variable reaches
the digest configuration or the LLM summarizer the workers use."""

from __future__ import annotations

import pytest

from runner.documents.llm_summary import LLMSummarizer
from runner.documents.policy import DigestConfig, DigestPolicy
from server.runtime import digest_config, summarizer_factory
from server.settings import Settings

DOCUMENT_SETTINGS = {
    "DIGESTD_DOC_DIGEST_POLICY": "always",
    "DIGESTD_DOC_MIN_CHARS": "500",
    "DIGESTD_DOC_MAX_SOURCES": "4",
    "DIGESTD_DOC_TIMEOUT_SECONDS": "30",
    "DIGESTD_DOC_MAX_CONCURRENT": "2",
    "DIGESTD_DOC_INCLUDE_EVIDENCE": "false",
    "DIGESTD_DOC_EVIDENCE_MAX_CHARS": "120",
    "DIGESTD_DOC_MAX_EVIDENCE_SNIPPETS": "2",
}


def test_every_document_setting_reaches_the_digest_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in DOCUMENT_SETTINGS.items():
        monkeypatch.setenv(name, value)
    config = digest_config(Settings())
    assert config == DigestConfig(
        policy=DigestPolicy.ALWAYS,
        min_chars=500,
        max_sources=4,
        timeout=30.0,
        max_concurrent=2,
        include_evidence=False,
        evidence_max_chars=120,
        max_evidence_snippets=2,
    )
    assert config.per_source_timeout == 15.0
    # The defaults are DigestConfig's own: an unset environment changes no cache key.
    for name in DOCUMENT_SETTINGS:
        monkeypatch.delenv(name)
    assert digest_config(Settings()) == DigestConfig()


def test_the_llm_summarizer_reads_the_excerpt_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIGEST_EXTRACTOR", "llm")
    monkeypatch.setenv("DIGEST_LLM_BASE_URL", "http://llm.test/v1")
    monkeypatch.setenv("DIGESTD_DOC_LLM_EXCERPT_CHARS", "40000")
    summarizer = summarizer_factory(Settings())()
    assert isinstance(summarizer, LLMSummarizer)
    assert summarizer.excerpt_chars == 40_000
    assert ":40000:" in summarizer.fingerprint()  # a new budget is a new cache key


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DIGESTD_DOC_EVIDENCE_MAX_CHARS", "501"),  # the payload schema caps a snippet at 500
        ("DIGESTD_DOC_MAX_EVIDENCE_SNIPPETS", "11"),  # and allows 10 of them
        ("DIGESTD_DOC_MAX_SOURCES", "0"),
        ("DIGESTD_DOC_MAX_CONCURRENT", "0"),
        ("DIGESTD_DOC_TIMEOUT_SECONDS", "0"),
        ("DIGESTD_DOC_CACHE_RETENTION_DAYS", "0"),
    ],
)
def test_out_of_range_document_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name.lower()):
        Settings()
