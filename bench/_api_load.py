"""The load generator of bench/api.py, run as its own process so its CPU is not the server's.

    python bench/_api_load.py SPEC.json

SPEC holds host, port, connections, warmup and duration (seconds), and `requests`: complete
HTTP/1.1 requests (text) that each connection cycles through. Prints one JSON line: requests
completed in the measured window, requests/s, latency p50/p90/p99/max in ms, every request
answered (warm-up and tail included), and errors.

It speaks HTTP/1.1 keep-alive over raw asyncio streams instead of httpx: on a 2-core machine an
httpx client spends more CPU per request than the server under test, and the comparison would
then measure the client. Responses are read by Content-Length (both servers always send it, but for a 304's empty
body). `expect_status` (default 200) is the status every answer must have to count as no error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    # Every request answered, warm-up and tail included (what the server's CPU time covers).
    answered: int = 0
    errors: int = 0
    first_error: str | None = None


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of sorted `values`."""
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, round(share * len(values)) - 1))
    return values[index]


async def _connection(
    host: str,
    port: int,
    requests: list[bytes],
    offset: int,
    measure_from: float,
    measure_until: float,
    check_graphql_errors: bool,
    expect_status: int,
    tally: Tally,
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    index = offset
    try:
        while True:
            started = time.perf_counter()
            if started >= measure_until:
                return
            writer.write(requests[index % len(requests)])
            index += 1
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            lowered = head.lower()
            at = lowered.find(b"content-length:")
            if at >= 0:
                length = int(lowered[at + 15 : lowered.find(b"\r\n", at)])
            elif status == 304:  # a 304 has no body, and Starlette sends no Content-Length
                length = 0
            else:
                raise RuntimeError("response without Content-Length")
            body = await reader.readexactly(length)
            finished = time.perf_counter()
            tally.answered += 1
            # Only requests wholly inside the window count, so warm-up and the tail are out.
            if started < measure_from or finished > measure_until:
                continue
            tally.latencies.append(finished - started)
            if status != expect_status or (check_graphql_errors and b'"errors"' in body):
                tally.errors += 1
                if tally.first_error is None:
                    tally.first_error = f"{status}: {body[:300].decode(errors='replace')}"
    finally:
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), timeout=2)


@dataclass(frozen=True)
class LoadSpec:
    host: str
    port: int
    requests: list[str]
    connections: int
    warmup: float
    duration: float
    check_graphql_errors: bool = False
    expect_status: int = 200


async def run(spec: LoadSpec) -> dict[str, object]:
    requests = [text.encode() for text in spec.requests]
    measure_from = time.perf_counter() + spec.warmup
    measure_until = measure_from + spec.duration
    tally = Tally()
    await asyncio.gather(
        *(
            # Connections start at different requests so ids are spread across the pool.
            _connection(
                spec.host,
                spec.port,
                requests,
                offset * 7,
                measure_from,
                measure_until,
                spec.check_graphql_errors,
                spec.expect_status,
                tally,
            )
            for offset in range(spec.connections)
        )
    )
    duration = spec.duration
    latencies = sorted(tally.latencies)
    return {
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / duration, 1),
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
        "p90_ms": round(percentile(latencies, 0.90) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "max_ms": round(latencies[-1] * 1000, 2) if latencies else None,
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2) if latencies else None,
        "answered": tally.answered,
        "errors": tally.errors,
        "first_error": tally.first_error,
    }


def main() -> None:
    spec = LoadSpec(**json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")))
    print(json.dumps(asyncio.run(run(spec))), flush=True)


if __name__ == "__main__":
    main()
