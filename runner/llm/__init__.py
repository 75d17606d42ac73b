"""The LLM side of extraction: client and retries, circuit breaker, token budgets, prompts,
forced tool calls and the tree reduce. `runner.extract.llm.LLMExtractor` ties them together.

This package and the document fetcher are the pipeline's only network edges.
"""

from runner.llm.breaker import BreakerState, CircuitBreaker, CircuitOpen, breaker_for
from runner.llm.client import LLMCallError, build_client, redact
from runner.llm.config import LLMConfig

__all__ = [
    "BreakerState",
    "CircuitBreaker",
    "CircuitOpen",
    "LLMCallError",
    "LLMConfig",
    "breaker_for",
    "build_client",
    "redact",
]
