"""The per-request context: the database pool, fresh DataLoaders, the caller's role, and the
few settings resolvers need."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import asyncpg

from runner.documents.fetch import FetchPolicy
from runner.documents.policy import DigestConfig
from schema.loaders import Loaders, create_loaders


class Role(str, Enum):
    READER = "reader"
    WRITER = "writer"


@dataclass(frozen=True)
class ApiConfig:
    """Settings the API itself needs (the server maps environment settings into it)."""

    max_attempts: int = 3
    max_message_chars: int = 200_000
    max_ingest_batch: int = 5000
    digest_config: DigestConfig = field(default_factory=DigestConfig)
    fetch_policy: FetchPolicy = field(default_factory=FetchPolicy)


@dataclass
class Context:
    pool: asyncpg.Pool
    role: Role
    config: ApiConfig
    loaders: Loaders = field(init=False)

    def __post_init__(self) -> None:
        self.loaders = create_loaders(self.pool)
