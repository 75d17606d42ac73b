"""The per-request context: the database pool, fresh DataLoaders, the caller's role, and the
few settings resolvers need."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import asyncpg

from runner.documents.fetch import FetchPolicy
from runner.documents.policy import DigestConfig
from runner.schedules.store import ScheduleLimits
from schema.resolvers.job_watch import JobEvents
from schema.resolvers.loaders import Loaders, create_loaders


class Role(str, Enum):
    """What a token may do: readers query; writers also ingest, trigger and manage schedules;
    admins also delete (digests, a channel's data)."""

    READER = "reader"
    WRITER = "writer"
    ADMIN = "admin"

    @property
    def may_write(self) -> bool:
        return self is not Role.READER


@dataclass(frozen=True)
class ApiConfig:
    """Settings the API itself needs (the server maps environment settings into it)."""

    max_attempts: int = 3
    max_message_chars: int = 200_000
    max_ingest_batch: int = 5000
    # The largest JSON response (bytes); larger answers are refused with RESPONSE_TOO_LARGE,
    # counted while the answer is built (schema/gate/response_budget.py).
    max_response_bytes: int = 16 * 1024 * 1024
    digest_config: DigestConfig = field(default_factory=DigestConfig)
    fetch_policy: FetchPolicy = field(default_factory=FetchPolicy)
    # Open subscriptions: at most this many per client address, and per process.
    max_subscriptions_per_client: int = 100
    max_subscriptions: int = 1000
    schedule_limits: ScheduleLimits = field(default_factory=ScheduleLimits)


@dataclass
class Context:
    pool: asyncpg.Pool
    role: Role
    config: ApiConfig
    request_id: str = "-"
    # The process's job events, for the jobProgress subscription (None: none served here).
    job_events: JobEvents | None = None
    loaders: Loaders = field(init=False)

    def __post_init__(self) -> None:
        self.loaders = create_loaders(self.pool)

    def begin_event(self) -> None:
        """Fresh DataLoaders for the next event of a subscription: one context
        lasts a whole WebSocket connection, but each event answers like its own request (rows
        read now, not remembered from the first event)."""
        self.loaders = create_loaders(self.pool)
