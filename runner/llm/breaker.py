"""A sliding-window circuit breaker per LLM endpoint.

It remembers the outcome of the last `window` calls. With at least `min_samples` outcomes of
which more than `failure_ratio` failed, it opens: calls fail fast instead of hammering a dead
provider. After `cooldown_seconds` it half-opens and lets one probe call through; the probe's
success closes it (with a fresh window), its failure opens it for another cooldown.

The breaker lives in the worker process (one per endpoint, shared by the jobs it runs): losing
it on restart only means a dead provider is probed again, which is what a restart should do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from enum import Enum

from runner.errors import LLMError
from runner.llm.config import LLMConfig

logger = logging.getLogger(__name__)

# The audit event logged when a breaker opens: `window_failures` of the `window_size` outcomes
# the window held failed.
TRIGGERED_EVENT = "digest.circuit_breaker_triggered"


class BreakerState(str, Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitOpen(LLMError):
    """The endpoint's breaker refuses calls for now."""

    def __init__(self, endpoint: str, retry_in: float) -> None:
        super().__init__(f"circuit open for the LLM endpoint; next probe in {retry_in:.0f}s")
        self.endpoint = endpoint
        self.retry_in = retry_in


class CircuitBreaker:
    def __init__(
        self,
        endpoint: str = "default",
        *,
        window: int = 10,
        min_samples: int = 5,
        failure_ratio: float = 0.7,
        cooldown_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = endpoint
        self.min_samples = min_samples
        self.failure_ratio = failure_ratio
        self.cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._outcomes: deque[bool] = deque(maxlen=window)  # True = failure
        self._opened_at: float | None = None
        self._probe_in_flight = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._clock() - self._opened_at >= self.cooldown_seconds:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def before_call(self) -> None:
        """Admit one call or raise CircuitOpen. In the half-open state only one probe is
        admitted at a time; the caller must report its outcome (or `abandon` it)."""
        state = self.state
        if state is BreakerState.CLOSED:
            return
        assert self._opened_at is not None
        if state is BreakerState.HALF_OPEN and not self._probe_in_flight:
            self._probe_in_flight = True
            return
        retry_in = max(0.0, self._opened_at + self.cooldown_seconds - self._clock())
        raise CircuitOpen(self.endpoint, retry_in)

    def refusal(self) -> CircuitOpen | None:
        """The CircuitOpen a call would get now, without admitting one: None when closed or
        half open (a probe may go through), so a caller can skip the model up front."""
        if self.state is not BreakerState.OPEN:
            return None
        assert self._opened_at is not None
        return CircuitOpen(
            self.endpoint, max(0.0, self._opened_at + self.cooldown_seconds - self._clock())
        )

    def record_success(self) -> None:
        if self._opened_at is not None:
            logger.info("circuit closed for %s after a successful probe", self.endpoint)
            self._outcomes.clear()
            self._opened_at = None
        self._probe_in_flight = False
        self._outcomes.append(False)

    def record_failure(self) -> None:
        if self._opened_at is not None:
            # A failed probe (or a late failure of a call admitted before opening).
            self._opened_at = self._clock()
            self._probe_in_flight = False
            return
        self._outcomes.append(True)
        failures = sum(self._outcomes)
        samples = len(self._outcomes)
        if samples >= self.min_samples and failures / samples > self.failure_ratio:
            self._opened_at = self._clock()
            # The audit event the seeds name, with its fields both in the line (for a plain log
            # reader) and as record attributes (for a structured handler).
            logger.warning(
                "%s endpoint=%s window_failures=%d window_size=%d",
                TRIGGERED_EVENT,
                self.endpoint,
                failures,
                samples,
                extra={
                    "event": TRIGGERED_EVENT,
                    "endpoint": self.endpoint,
                    "window_failures": failures,
                    "window_size": samples,
                },
            )

    def abandon(self) -> None:
        """The admitted call ended without a verdict on the endpoint (cancelled, or rejected
        for a reason of its own such as a bad request)."""
        self._probe_in_flight = False


_registry: dict[str, CircuitBreaker] = {}
_registry_lock = threading.Lock()


def breaker_for(endpoint: str, **settings: float | int) -> CircuitBreaker:
    """The process-wide breaker of `endpoint`, created with `settings` on first use."""
    with _registry_lock:
        breaker = _registry.get(endpoint)
        if breaker is None:
            breaker = CircuitBreaker(endpoint, **settings)  # type: ignore[arg-type]
            _registry[endpoint] = breaker
        return breaker


def registered_breakers() -> list[tuple[str, CircuitBreaker]]:
    """Every endpoint's breaker in this process (for the metrics)."""
    with _registry_lock:
        return [(key, breaker) for key, breaker in _registry.items() if _MODEL_KEY not in key]


def registered_model_breakers() -> list[tuple[str, str, CircuitBreaker]]:
    """`(endpoint, model, breaker)` of every fallback model's breaker (for the metrics)."""
    with _registry_lock:
        found = []
        for key, breaker in _registry.items():
            endpoint, separator, model = key.partition(_MODEL_KEY)
            if separator:
                found.append((endpoint, model, breaker))
        return found


# Joins an endpoint and a model into the registry key of that model's own breaker.
_MODEL_KEY = " model="


def config_breaker(config: LLMConfig) -> CircuitBreaker:
    """The process-wide breaker of `config`'s endpoint, with `config`'s breaker settings on
    first use: the chat extractor and the document summarizer both take theirs from here."""
    return breaker_for(
        config.endpoint,
        window=config.breaker_window,
        min_samples=config.breaker_min_samples,
        failure_ratio=config.breaker_failure_ratio,
        cooldown_seconds=config.breaker_cooldown_seconds,
    )


def model_breaker(config: LLMConfig, model: str) -> CircuitBreaker:
    """The process-wide breaker of `model` alone behind `config`'s endpoint: a fallback model
    gets its own, so the failures that opened the primary's breaker do not refuse it."""
    return breaker_for(
        f"{config.endpoint}{_MODEL_KEY}{model}",
        window=config.breaker_window,
        min_samples=config.breaker_min_samples,
        failure_ratio=config.breaker_failure_ratio,
        cooldown_seconds=config.breaker_cooldown_seconds,
    )
