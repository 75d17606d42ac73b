"""Instructions per request of a server of bench/api.py, counted by valgrind's callgrind: a
figure that, unlike requests per second, does not move with what else the machine runs.

The server runs under `valgrind --tool=callgrind --instr-atstart=no` (so its start-up is not
counted, and runs at a fraction of the slowdown); requests are sent one after another on one
keep-alive connection. After a warm-up (caches, prepared statements, compiled plans), counting is
switched on with `callgrind_control -i on`, N requests are sent, and the count is dumped: the
whole process's instructions (uvicorn, h11, the app, asyncpg; not PostgreSQL's) over N.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path


# What a server is started with: the callgrind prefix for bench/api.py's command.
def callgrind_prefix(out_file: Path) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out_file}",
    ]


def _send_all(port: int, requests: list[bytes], count: int) -> None:
    """`count` requests, cycling through `requests`, one at a time on one connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        reader = sock.makefile("rb")
        for number in range(count):
            sock.sendall(requests[number % len(requests)])
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                line = reader.readline()
                if not line:
                    raise RuntimeError("the server closed the connection")
                head += line
            status = int(head[9:12])
            match = re.search(rb"(?i)content-length:\s*(\d+)", head)
            length = int(match.group(1)) if match else 0
            body = reader.read(length)
            if status != 200 or b'"errors"' in body:
                raise RuntimeError(f"{status}: {body[:300]!r}")


def _control(pid: int, *arguments: str) -> None:
    subprocess.run(
        ["callgrind_control", *arguments, str(pid)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _total(dump: Path) -> int:
    for line in dump.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {dump}")


def instructions_per_request(
    port: int, pid: int, requests: list[str], count: int, warmup: int, out_file: Path, name: str
) -> int:
    """Instructions the server process `pid` (under callgrind) runs per request."""
    encoded = [text.encode() for text in requests]
    _send_all(port, encoded, warmup)
    before = set(out_file.parent.glob(out_file.name + ".*"))
    _control(pid, "-i", "on")
    started = time.monotonic()
    _send_all(port, encoded, count)
    _control(pid, "-d", name)
    _control(pid, "-i", "off")
    deadline = started + 600
    while True:
        dumps = set(out_file.parent.glob(out_file.name + ".*")) - before
        if dumps:
            return round(_total(max(dumps, key=lambda path: path.stat().st_mtime)) / count)
        if time.monotonic() > deadline:
            raise RuntimeError("callgrind wrote no dump")
        time.sleep(0.2)
