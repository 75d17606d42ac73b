"""The composition root reads every document digest setting: each DIGESTD_DOC_* variable reaches
the digest configuration or the LLM summarizer the workers use; the token management settings
reach the LLM configuration and the report writer."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from runner.documents.llm_summary import LLMSummarizer
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.llm.config import LLMConfig
from server.runtime import digest_config, llm_config, report_runner, summarizer_factory
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


TOKEN_SETTINGS = {
    "DIGEST_EXTRACTOR": "llm",
    "DIGEST_LLM_BASE_URL": "http://llm.test/v1",
    "DIGESTD_TOKEN_MANAGEMENT_ENABLED": "false",
    "DIGESTD_TOKEN_SAFETY_MARGIN": "0.25",
    "DIGESTD_RUNTIME_OVERHEAD_TOKENS": "1000",
    "DIGESTD_ALLOW_CONTENT_DROPPING": "false",
}


def test_the_token_management_settings_reach_the_llm_config_and_the_report_writer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in TOKEN_SETTINGS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DIGESTD_ARCHIVE_DIR", str(tmp_path))
    settings = Settings()
    config = llm_config(settings)
    assert config.token_management_enabled is False and config.allow_content_dropping is False
    assert config.token_safety_margin == 0.25 and config.runtime_overhead_tokens == 1000
    writer = report_runner(settings).llm_writer
    assert writer is not None and writer.archive_dir == tmp_path
    assert writer.call.caller.config.token_safety_margin == 0.25
    assert writer.version.endswith(":unbudgeted:nodrop")
    # Unset, they are LLMConfig's own defaults.
    for name in TOKEN_SETTINGS:
        if name.startswith("DIGESTD_"):
            monkeypatch.delenv(name)
    defaults, plain = llm_config(Settings()), LLMConfig()
    for name in (
        "token_management_enabled",
        "allow_content_dropping",
        "token_safety_margin",
        "runtime_overhead_tokens",
    ):
        assert getattr(defaults, name) == getattr(plain, name)
    assert Settings().digestd_summarization_cache_enabled is True


@pytest.mark.parametrize(
    ("name", "value"),
    [("DIGESTD_TOKEN_SAFETY_MARGIN", "1"), ("DIGESTD_RUNTIME_OVERHEAD_TOKENS", "-1")],
)
def test_out_of_range_token_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()


def test_the_model_settings_reach_the_summarizer_and_the_report_writer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DIGEST_EXTRACTOR", "llm")
    monkeypatch.setenv("DIGEST_LLM_BASE_URL", "http://llm.test/v1")
    monkeypatch.setenv("DIGEST_REDUCE_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("DIGEST_DOC_MODEL", "gpt-4.1-mini")
    # Blanks and repeats are dropped; the primary itself is not its own fallback.
    monkeypatch.setenv("DIGEST_LLM_FALLBACK_MODELS", "gpt-4o, ,gpt-4.1-mini,gpt-4o,o4-mini")
    settings = Settings()
    config = llm_config(settings)
    assert config.document_model == "gpt-4.1-mini"
    assert config.fallback_models == ("gpt-4o", "gpt-4.1-mini", "o4-mini")
    summarizer = summarizer_factory(settings)()
    assert isinstance(summarizer, LLMSummarizer)
    call = summarizer.call
    assert call.model == summarizer.model == "gpt-4.1-mini"
    assert [model for _, model in call.fallbacks] == ["gpt-4o", "o4-mini"]
    # Each fallback has a breaker of its own, apart from the endpoint's.
    breakers = [call.caller.breaker, *(caller.breaker for caller, _ in call.fallbacks)]
    assert len({id(breaker) for breaker in breakers}) == 3
    writer = report_runner(settings).llm_writer
    assert writer is not None and writer.call.model == "gpt-4o-mini"
    assert [model for _, model in writer.call.fallbacks] == ["gpt-4o", "gpt-4.1-mini", "o4-mini"]
    assert writer.version_for("gpt-4o") == "llm:gpt-4o:report-1:60" != writer.version


def test_unset_model_settings_keep_the_reduce_model_and_no_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DIGEST_EXTRACTOR", "llm")
    monkeypatch.setenv("DIGEST_LLM_BASE_URL", "http://llm.test/v1")
    monkeypatch.setenv("DIGEST_REDUCE_MODEL", "gpt-4o")
    summarizer = summarizer_factory(Settings())()
    assert isinstance(summarizer, LLMSummarizer)
    assert summarizer.call.model == "gpt-4o" and summarizer.call.fallbacks == ()
    # The primary's digest key is the one it had before fallback models existed.
    assert summarizer.fingerprint() == summarizer.fingerprint("gpt-4o")


def test_a_fallback_model_name_with_spaces_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIGEST_LLM_FALLBACK_MODELS", "gpt-4o, two words")
    with pytest.raises(ValidationError, match="a model name has no spaces: 'two words'"):
        Settings()
