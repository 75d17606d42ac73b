"""Run every benchmark in turn and pass their JSON lines through.

    /tmp/venv/bin/python bench/all.py [--quick] [--database-url URL] [--only ingest,api]

Each script runs as its own process (as documented in bench/README.md), one after the other so
they do not compete for the machine. The exit status is the first non-zero one of the scripts,
after all have run; a failing script prints a `{"bench": "all", "failed": ...}` line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# In the order of docs/benchmarks.md, then the ones it describes in their own sections.
SCRIPTS = (
    "ingest",
    "pipeline",
    "keyset",
    "api",
    "job_queue",
    "workers",
    "event_loop",
    "coverage",
    "scale",
    "disentangle",
    "api_layers",
    "rows",
    "subscriptions",
    "documents_digest",
    "report_sources",
    "pdf_memory",
)
# bench/pipeline.py and bench/scale.py digest, bench/disentangle.py links, bench/documents_digest.py
# digests documents, bench/report_sources.py numbers a report's sources and bench/pdf_memory.py
# reads PDFs, all without a database: they take no --database-url.
NEEDS_NO_DATABASE = frozenset(
    {"pipeline", "scale", "disentangle", "documents_digest", "report_sources", "pdf_memory"}
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: seconds per script")
    parser.add_argument("--database-url", help="a disposable database (default: embedded, temp)")
    parser.add_argument(
        "--only", help=f"comma-separated subset of {', '.join(SCRIPTS)} (default: all)"
    )
    args = parser.parse_args()
    chosen = SCRIPTS if not args.only else tuple(name.strip() for name in args.only.split(","))
    unknown = sorted(set(chosen) - set(SCRIPTS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(SCRIPTS)}")
    status = 0
    for name in chosen:
        command = [sys.executable, str(BENCH / f"{name}.py")]
        if args.quick:
            command.append("--quick")
        if args.database_url and name not in NEEDS_NO_DATABASE:
            command += ["--database-url", args.database_url]
        started = time.monotonic()
        code = subprocess.run(command, cwd=BENCH.parent).returncode
        seconds = round(time.monotonic() - started, 1)
        print(
            json.dumps({"bench": "all", "script": name, "exit": code, "seconds": seconds}),
            flush=True,
        )
        if code != 0:
            print(json.dumps({"bench": "all", "failed": name, "exit": code}), flush=True)
            status = status or code
    return status


if __name__ == "__main__":
    sys.exit(main())
