"""Prometheus metrics, served at /metrics in the text format.

Two kinds of figures. Counters of what this process did (GraphQL requests and errors, HTTP
request durations; the workers' own figures live beside the work in `runner/metrics.py`) are
kept by `prometheus_client` in its process-wide registry. The job queue is a different matter:
many workers on many machines share it, so its figures are counted by Postgres at scrape time
(`db.jobs.queue_summary`), and any one process's /metrics shows the whole queue; so is the
delivery outbox (`db.deliveries.delivery_state_counts`: deliveries by state, dead letters).
"""

from __future__ import annotations

from collections.abc import Iterator

import asyncpg
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from db.deliveries import DeliveryState, delivery_state_counts
from db.jobs import JobKind, JobStatus, QueueCount, queue_summary
from db.models import DeliveryStateCount
from runner.delivery.contract import DestinationKind

GRAPHQL_REQUESTS = Counter(
    "digestd_graphql_requests",
    "GraphQL requests answered, by operation type (query, mutation; 'none' when the request "
    "was refused before its operation was known).",
    ["operation_type"],
)
GRAPHQL_ERRORS = Counter(
    "digestd_graphql_errors",
    "Errors in GraphQL answers, by operation type and extensions.code.",
    ["operation_type", "code"],
)
HTTP_REQUEST_SECONDS = Histogram(
    "digestd_http_request_duration_seconds",
    "HTTP requests by method, route and status, with their duration.",
    ["method", "route", "status"],
)
DATABASE_UP = Gauge(
    "digestd_database_up", "1 when the last /metrics scrape could read the job queue, else 0."
)


class QueueCollector(Collector):
    """The job queue as the last scrape read it from Postgres. Every kind and status is
    reported, zero included, so a series does not vanish when its last job moves on."""

    def __init__(self) -> None:
        self.counts: list[QueueCount] = []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily(
            "digestd_jobs", "Jobs by kind and status.", labels=["kind", "status"]
        )
        depth = GaugeMetricFamily(
            "digestd_queue_depth", "Queued jobs by kind (due now or later).", labels=["kind"]
        )
        oldest = GaugeMetricFamily(
            "digestd_queue_oldest_due_seconds",
            "How long the oldest due queued job of each kind has waited (0: none waiting).",
            labels=["kind"],
        )
        found = {(count.kind, count.status): count for count in self.counts}
        for kind in JobKind:
            for status in JobStatus:
                count = found.get((kind, status))
                jobs.add_metric([kind, status], count.jobs if count else 0)
            queued = found.get((kind, JobStatus.QUEUED))
            depth.add_metric([kind], queued.jobs if queued else 0)
            oldest.add_metric([kind], queued.oldest_due_seconds if queued else 0.0)
        yield from (jobs, depth, oldest)


QUEUE = QueueCollector()
REGISTRY.register(QUEUE)


class DeliveryCollector(Collector):
    """The delivery outbox as the last scrape read it: deliveries by destination kind and
    state, and the dead letters (DEAD deliveries, which wait for `retryDelivery`), every series
    reported, zero included."""

    def __init__(self) -> None:
        self.counts: list[DeliveryStateCount] = []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        by_state = GaugeMetricFamily(
            "digestd_deliveries",
            "Deliveries by destination kind and state (pending, delivering, delivered, dead).",
            labels=["kind", "state"],
        )
        dead = GaugeMetricFamily(
            "digestd_deliveries_dead",
            "Dead-letter deliveries (refused, or out of attempts), by destination kind.",
            labels=["kind"],
        )
        found = {(count.kind, count.state): count.deliveries for count in self.counts}
        for kind in DestinationKind:
            for state in DeliveryState:
                by_state.add_metric([kind, state], found.get((kind, state), 0))
            dead.add_metric([kind], found.get((kind, DeliveryState.DEAD), 0))
        yield from (by_state, dead)


DELIVERIES = DeliveryCollector()
REGISTRY.register(DELIVERIES)


async def metrics_endpoint(request: Request) -> Response:
    """GET /metrics. The queue figures are refreshed first; without a database the process
    counters are still served, and `digestd_database_up` says why the queue ones are stale."""
    pool: asyncpg.Pool | None = getattr(request.app.state, "pool", None)
    DATABASE_UP.set(0)
    if pool is not None:
        try:
            async with pool.acquire(timeout=2) as connection:
                QUEUE.counts = await queue_summary(connection)
                DELIVERIES.counts = await delivery_state_counts(connection)
            DATABASE_UP.set(1)
        except Exception:  # noqa: BLE001 - a scrape reports the outage, it does not fail on it
            pass
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def observe_graphql(operation_type: str, error_codes: list[str]) -> None:
    GRAPHQL_REQUESTS.labels(operation_type).inc()
    for code in error_codes:
        GRAPHQL_ERRORS.labels(operation_type, code).inc()
