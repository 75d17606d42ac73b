"""The figures a channel job records in `digest_jobs.stats` (and the pipeline bench prints)."""

from __future__ import annotations

from typing import Any

from runner.core.extractor import Extractor
from runner.digests.pipeline import PipelineResult


def job_stats(result: PipelineResult, extractor: Extractor, messages: int) -> dict[str, Any]:
    """The figures a job shows: sizes, cache use, LLM usage and the token ratio."""
    usage = extractor.usage
    content_tokens = usage.content_tokens or result.content_tokens
    flagged = sum(1 for flags in result.validation.item_flags.values() for item in flags if item)
    return {
        "messages": messages,
        "chunks": result.chunk_count,
        "chunks_from_cache": result.chunks_from_cache,
        "chunks_failed": len(result.failed_chunks),
        "chunks_offline": len(result.fallback_chunks),
        "extractor": extractor.name,
        "llm_calls": usage.llm_calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cached_tokens": usage.cached_tokens,
        "content_tokens": content_tokens,
        "prompt_to_content_ratio": round(usage.prompt_tokens / content_tokens, 3)
        if content_tokens and usage.prompt_tokens
        else None,
        "items_rejected": len(result.map_rejections) + len(result.validation.rejections),
        "items_flagged": flagged,
        "tokens_estimated": result.tokens_estimated,
        "duration_seconds": round(result.duration_seconds, 3),
    }
