#!/usr/bin/env python3
"""Replay the resilience cases against a digestd install, through its CLI and GraphQL only:
coverage, edited messages, workers that survive the database, hostile imports and API requests,
odd LLM endpoints and pinned installs.

    .venv/bin/python scripts/replay_resilience.py [--digestd .venv/bin/digestd] [--data ../shared/data]
                                               [--only 1,3] [--keep]

Each group of cases gets its own temporary DIGESTD_HOME (embedded PostgreSQL; DATABASE_URL is
removed from every child's environment), starts `digestd serve` on a free port when it needs
GraphQL, and reads every result back through GraphQL or the CLI's output. The database is
touched directly only to inject faults (SIGKILL of a backend). The fake OpenAI-compatible
endpoint of runner/llm/fake.py plays the LLM endpoints, one on a port of 127.0.0.1 per
behaviour (`cover`, `slow`, `jitter`, `llama8k`, `html`).

Prints a Markdown table `case | expected | observed | result` and exits 0 (it is a report);
every step has a timeout, and a failing case never stops the others.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import unescape

import asyncpg
import httpx

from runner.llm import fake as fake_llm

ROOT = Path(__file__).resolve().parents[1]
TERMINAL = {"SUCCEEDED", "PARTIAL", "FAILED", "CANCELLED"}
READER, WRITER = "reader-token-0123", "writer-token-4567"
# Text that only an internal error shows a client (exception names, library and codec messages).
INTERNALS = re.compile(
    r"Traceback|max\(\) arg|invalid byte sequence|codec|tsquery|recursion|asyncpg|Error:|"
    r"File \"|4300 digits|out of range for|object has no attribute|NoneType|^None$",
    re.I,
)
WORDS = (
    "deploy docker build cache layer image registry volume network port config staging "
    "production rollback release version branch merge review test flaky timeout retry "
    "memory cpu disk latency queue worker lease database index query migration backup"
).split()
JOB = (
    "id status attempts maxAttempts error resultMessage digestId warnings { code message } "
    "stats { messages chunks chunksFailed chunksOffline }"
)


# --- the report ---------------------------------------------------------------------------

CASES: list[tuple[str, str, str]] = [
    (
        "1.1",
        "partial digest: the chunk the model failed on is read offline",
        "job 1 PARTIAL naming the chunk (CHUNKS_EXTRACTED_OFFLINE), job 2 finds nothing left",
    ),
    (
        "1.2",
        "partial digest: messageCoverage.leftOut after the offline read",
        "no chunk_failed range: the offline rules covered the chunk",
    ),
    ("1.3", "backfill with older timestamps", "the 15 older messages are digested"),
    ("1.4", "re-ingest of a digested message with ts 2030", "the 10 later messages are digested"),
    ("1.5", "catch-up window since/until", "exactly the 20 messages of [since, until)"),
    (
        "1.6",
        "catch-up leaves coverage unchanged",
        "uncoveredMessageCount 50, next trigger digests 50",
    ),
    ("1.7", "Digest.messageCoverage shown", "count/first/last/catchUp present, count = job's"),
    (
        "1.8",
        "triggerDigest idempotent while a job is active",
        "second trigger returns the same job",
    ),
    ("2.1", "edited message: old pointer's resolvedText", "still the verbatim quote"),
    (
        "2.2",
        "edited message: pointer revision + revisionText",
        "revision 1, revisionText = original text",
    ),
    ("2.3", "edited message: item flagged", "flag source_edited"),
    (
        "2.4",
        "edited message uncovered and re-digested",
        "uncoveredMessageCount 1, next job digests it",
    ),
    ("3.1", "serve: SIGKILL of a Postgres backend mid-job", "the job finishes"),
    ("3.2", "serve: trigger after the kill", "a new job, finished"),
    ("3.3", "serve: /readyz after the kill", "200 ready iff the runner runs (else 503 runner)"),
    (
        "3.4",
        "standalone worker: burst of Postgres backend SIGKILLs mid-job",
        "worker alive, then finishes a job",
    ),
    ("3.5", "/healthz during a 30,000-message offline digest", "max latency < 1 s"),
    ("3.6", "lease lost twice with max attempts 2", "FAILED, error lease_expired:..."),
    ("3.7", "serve SIGTERM", "exit code 0"),
    ("3.8", "serve SIGTERM: embedded PostgreSQL", "stopped (postmaster gone)"),
    ("3.9", "worker SIGTERM", "exit code 0"),
    (
        "4.1",
        "JSONL: deep-nested line + 5000-digit int among 1,000 good",
        "exit 0, 1,000 stored, 2 rejected",
    ),
    (
        "4.2",
        "Discord JSON: deep-nested + 5000-digit int among 1,000 good",
        "exit 0, 1,000 stored, 2 rejected",
    ),
    (
        "4.3",
        "Slack channels.json: deep-nested / 5000-digit entries",
        "exit 0, good channel's 50 stored",
    ),
    ("4.4", "Slack folder with a FIFO day file", "exit 2, clear error, no hang"),
    ("4.5", "Slack channel named ../outside", "refused, outside text not stored"),
    ("4.6", "QMSum JSON (every record rejected)", "exit 1, names the format assumed"),
    ("4.7", "/dev/zero given directly", "exit 2, says what it is"),
    ("4.8", "FIFO given directly", "exit 2, says what it is, no hang"),
    ("4.9", "UTF-16 file", "encoding hint (or imported)"),
    ("4.10", "database dies mid-import", "one-line error, no traceback"),
    ("5.1", "empty selection set { channels { } }", "clear error, no internals, HTTP < 500"),
    ("5.2", "NUL byte in a filter", "clear error, no internals, HTTP < 500"),
    ("5.3", "NUL byte in a channel name (ingest)", "clear error, no internals, HTTP < 500"),
    ("5.4", 'lone surrogate "\\ud800" in variables', "clear error, no internals, HTTP < 500"),
    ("5.5", "cursor with row id 2^70", "clear error, no internals, HTTP < 500"),
    ("5.6", "date 9999-12-31T23:59:59-14:00", "clear error, no internals, HTTP < 500"),
    ("5.7", "400 dashes in a knowledgeItems query", "clear error or results, no internals"),
    ("5.8", "attachments nested 900 deep", "clear error, no internals, HTTP < 500"),
    ("5.9", "body null", "clear error, HTTP 400"),
    ("5.10", "5000-digit integer in variables", "clear error, HTTP < 500"),
    ("5.11", "5000-deep JSON in variables", "clear error, HTTP < 500"),
    ("5.12", "reader token, 22 MB mutation of 300,000 messages", "refused < 2 s, /healthz < 1 s"),
    ("5.13", "30 aliases of document { canonicalText }", "clear error, response < 5 MB"),
    ("5.14", 'id "١"', "refused: not canonical"),
    ("5.15", 'id "1_0"', "refused: not canonical"),
    ("5.16", 'id " 7 "', "refused: not canonical"),
    ("5.17", "X-Request-Id on responses", "header present"),
    ("5.18", "server log after the hostile requests", "no traceback"),
    ("6.1", "llama.cpp-like endpoint, 8,192 context, 400 on overflow", "job SUCCEEDED"),
    (
        "6.2",
        "LIMITS_DEFAULTED names the setting to use",
        "warning mentions DIGEST_MAP_CONTEXT_TOKENS",
    ),
    ("6.3", "endpoint answering 200 text/html", "clear error saying HTML, no AttributeError"),
    ("6.4", "known items at concurrency 4, two runs", "identical knowledge items"),
    ("7.1", "direct dependencies pinned to tested ranges", "upper bounds, graphql-core declared"),
    ("7.2", "lock or constraints file shipped", "file present"),
    ("7.3", "README and CI install with it", "both use it"),
]


@dataclass
class Row:
    case: str
    expected: str
    observed: str = "not run"
    ok: bool | None = None


class Report:
    def __init__(self) -> None:
        self.rows = {key: Row(case, expected) for key, case, expected in CASES}

    def set(self, key: str, observed: str, ok: bool | None) -> None:
        self.rows[key].observed, self.rows[key].ok = observed, ok

    def check(self, key: str, body: Callable[[], tuple[str, bool | None]]) -> None:
        """Run one case; whatever it raises becomes its observed outcome."""
        try:
            self.set(key, *body())
        except Exception as error:  # noqa: BLE001 - one case never stops the others
            self.set(key, f"error: {type(error).__name__}: {error}", False)

    def table(self, sections: set[str] | None) -> str:
        def cell(text: str, width: int = 110) -> str:
            text = " ".join(str(text).split()).replace("|", "\\|")
            return text if len(text) <= width else text[: width - 1] + "…"

        def result(row: Row) -> str:
            return {True: "PASS", False: "FAIL"}.get(
                row.ok, "not run" if row.observed == "not run" else "SKIP"
            )

        rows = [["case", "expected", "observed", "result"]] + [
            [cell(f"{key} {row.case}", 70), cell(row.expected, 60), cell(row.observed), result(row)]
            for key, row in self.rows.items()
            if sections is None or key.split(".")[0] in sections
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in rows
        ]
        lines.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
        return "\n".join(lines)


# --- the fake LLM endpoint ------------------------------------------------------------------

_MESSAGE = re.compile(r"<message ([^>]*)>(.*?)</message>", re.DOTALL)
_ATTR = re.compile(r"""(\w+)=(?:"([^"]*)"|'([^']*)')""")
_SUMMARY = re.compile(r"<summary [^>]*>(.*?)</summary>", re.DOTALL)
_ENTITIES = {"&quot;": '"', "&#10;": "\n", "&#13;": "\r", "&#9;": "\t", "&apos;": "'"}


def _unescape(text: str) -> str:
    return unescape(text, _ENTITIES)


def fake_chunk_summary(user: str) -> dict[str, Any]:
    """A map answer true to the chunk: one pointer into its longest message, titled with the
    chunk index and the chunks whose items it was shown as known items."""
    index = int(m[1]) if (m := re.search(r'<chunk index="(\d+)"', user)) else -1
    known = sorted({int(c) for c in re.findall(r"^- \S+ \[\w+\] c(\d+) knew", user, re.M)})
    sent = []
    for raw, text in _MESSAGE.findall(user.split("<chunk", 1)[-1]):
        attrs = {k: _unescape(a or b) for k, a, b in _ATTR.findall(raw)}
        sent.append((attrs["id"], _unescape(text), int(attrs.get("offset", 0))))
    summary: dict[str, Any] = {
        "chunk_summary": f"Chunk {index}: {len(sent)} messages.",
        "signal_quality": {"level": "medium", "reason": "fake endpoint"},
        "topics": [{"title": "chat", "message_ids": [s[0] for s in sent[:5]]}],
        "notable_message_ids": [s[0] for s in sent[:2]],
    }
    if sent:
        message_id, text, offset = max(sent, key=lambda s: len(s[1]))
        quote = text[:60]
        summary["knowledge_items"] = [
            {
                "key": "K1",
                "kind": "fact",
                "title": f"c{index} knew {known}",
                "content_pointer": {
                    "message_id": message_id,
                    "char_start": offset,
                    "char_end": offset + len(quote),
                    "quote": quote,
                },
            }
        ]
    return summary


def fake_digest(user: str) -> dict[str, Any]:
    """A reduce answer: the union of the summaries' items."""
    summaries = [json.loads(_unescape(raw)) for raw in _SUMMARY.findall(user)]
    items: dict[str, Any] = {}
    for s in summaries:
        for item in s.get("knowledge_items", []):
            items.setdefault(item["key"], item)
    return {
        "title": "Fake digest",
        "overview": " ".join(s.get("chunk_summary", s.get("overview", "")) for s in summaries)[
            :2400
        ],
        "coverage": {"messages_total": 0, "messages_covered": 0},
        "signal_quality": {"level": "medium", "reason": "fake endpoint"},
        "topics": [t for s in summaries for t in s.get("topics", [])][:12],
        "knowledge_items": list(items.values())[:60],
        "notable_message_ids": list(
            dict.fromkeys(i for s in summaries for i in s.get("notable_message_ids", []))
        )[:20],
    }


def prompt_tokens(body: dict[str, Any]) -> int:
    """A rough count of a request's prompt, as a server would report it: 4 characters a token."""
    sent = sum(len(str(m.get("content") or "")) for m in body["messages"])
    return (sent + len(json.dumps(body["tools"]))) // 4


def user_text(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def answer(body: dict[str, Any], arguments: Any = None) -> dict[str, Any]:
    """The forced tool call of `body` with `arguments`, by default the scripted map or reduce
    answer."""
    tool, user = fake_llm.tool_of(body), user_text(body)
    if arguments is None:
        arguments = fake_chunk_summary(user) if tool == "emit_chunk_summary" else fake_digest(user)
    return fake_llm.completion(
        tool=tool,
        arguments=arguments,
        prompt_tokens=prompt_tokens(body),
        completion_tokens=50,
        model=body["model"],
    )


MODEL_LIST = {
    "object": "list",
    "data": [{"id": "local-model", "object": "model", "owned_by": "me"}],
}
NGINX_PAGE = "<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"


class FakeEndpoints:
    """The LLM endpoints of the cases: the fake of runner/llm/fake.py, one per behaviour, each
    on a port of its own on a thread, started on first use. Behaviours: cover (a chunk holding
    FAILCHUNK gets unusable output while `fail` is set; SLOWCHUNK answers after 3 s), slow
    (every answer after `delay`), jitter (random 0.02 or 0.6 s), llama8k (400 "maximum
    context length" above 8,192 tokens, like llama-cpp-python), html (a web server's page)."""

    def __init__(self) -> None:
        self.fail = True
        self.delay = 1.0
        self.overflows = 0
        self._models: dict[str, fake_llm.Model] = {
            "cover": self.cover,
            "slow": self.slow,
            "jitter": self.jitter,
            "llama8k": self.llama8k,
            "html": lambda body: fake_llm.raw(NGINX_PAGE, "text/html"),
        }
        self._urls: dict[str, str] = {}
        self._servers = contextlib.ExitStack()
        self._lock = threading.Lock()

    def url(self, mode: str) -> str:
        with self._lock:
            if mode not in self._urls:
                endpoint = fake_llm.FakeLLM(self._models[mode], routes={"/v1/models": MODEL_LIST})
                self._urls[mode] = self._servers.enter_context(endpoint.serve_in_thread())
            return self._urls[mode]

    def close(self) -> None:
        self._servers.close()

    async def cover(self, body: dict[str, Any]) -> fake_llm.Answer:
        user = user_text(body)
        if "SLOWCHUNK" in user:
            await asyncio.sleep(3.0)
        if self.fail and "FAILCHUNK" in user:
            return answer(body, "this is not JSON")
        return answer(body)

    async def slow(self, body: dict[str, Any]) -> fake_llm.Answer:
        await asyncio.sleep(self.delay)
        return answer(body)

    async def jitter(self, body: dict[str, Any]) -> fake_llm.Answer:
        await asyncio.sleep(random.choice((0.02, 0.6)))
        return answer(body)

    def llama8k(self, body: dict[str, Any]) -> fake_llm.Answer:
        prompt = prompt_tokens(body)
        wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if prompt + wanted <= 8192:
            return answer(body)
        self.overflows += 1
        message = (
            f"This model's maximum context length is 8192 tokens, however you requested "
            f"{prompt + wanted} tokens ({prompt} in your prompt; {wanted} for the "
            "completion). Please reduce your prompt; or completion length."
        )
        refusal = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        }
        return fake_llm.error(400, body=refusal)


# --- processes, homes, servers --------------------------------------------------------------


@dataclass
class Result:
    rc: int | None  # None: killed after the timeout
    out: str
    err: str
    seconds: float

    @property
    def text(self) -> str:
        return self.out + self.err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pid_alive(pid: int) -> bool:
    """A live process (not a zombie) has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return sys.platform != "linux"


def exit_code(code: int | None) -> str:
    return (
        f"killed by signal {-code} (shell status {128 - code})"
        if code is not None and code < 0
        else f"exit code {code}"
    )


def stop_process(
    proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 15
) -> int | None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def finish(proc: subprocess.Popen[bytes], timeout: float) -> Result:
    """The outcome of a captured child; killed after `timeout` (rc None)."""
    started, rc = time.monotonic(), None
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=10)
    return Result(
        rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - started
    )


class Home:
    """A temporary DIGESTD_HOME and the digestd processes started in it."""

    def __init__(self, ctx: Ctx, name: str, env: dict[str, str] | None = None) -> None:
        self.ctx, self.path = ctx, ctx.workdir / name
        self.path.mkdir(parents=True)
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "TEST_DATABASE_URL")
        }
        self.env.update(
            {"DIGESTD_HOME": str(self.path / "home"), "PYTHONUNBUFFERED": "1"}, **(env or {})
        )
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Any] = []
        ctx.homes.append(self)

    def cli(self, *args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Result:
        return finish(self.spawn(*args, env=env, capture=True), timeout)

    def spawn(
        self, *args: str, env: dict[str, str] | None = None, capture: bool = False
    ) -> subprocess.Popen[bytes]:
        log = (
            subprocess.PIPE
            if capture
            else open(self.path / f"{args[0]}-{len(self.procs)}.log", "wb")
        )
        self.logs.append(log)
        proc = subprocess.Popen(
            [str(self.ctx.digestd), *args],
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT if not capture else subprocess.PIPE,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def serve(self, *flags: str, env: dict[str, str] | None = None) -> Serve:
        port, log = free_port(), self.path / f"serve-{len(self.procs)}.log"
        proc = self.spawn("serve", "--port", str(port), *flags, env=env)
        serve = Serve(proc, f"http://127.0.0.1:{port}", log)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"serve exited {proc.returncode}: {serve.log.read_text()[-300:]}"
                )
            try:
                if httpx.get(serve.base + "/healthz", timeout=2).status_code == 200:
                    return serve
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise TimeoutError("serve did not answer /healthz within 90 s")

    def postmaster(self) -> tuple[int, str, int] | None:
        """(pid, socket dir, port) of the embedded server, from its postmaster.pid."""
        try:
            lines = (self.path / "home" / "pgdata" / "postmaster.pid").read_text().splitlines()
        except OSError:
            return None
        return int(lines[0]), lines[4], int(lines[3])

    def kill_backend(self, like: str = "%") -> int:
        """Fault injection: SIGKILL one client backend of the digestd database whose query is
        `like` (Postgres then restarts every process and refuses connections briefly)."""
        info = self.postmaster()
        # Only ever the embedded server's Unix socket in this home, never a TCP port.
        if info is None or not info[1].startswith("/"):
            raise LookupError(
                "the embedded PostgreSQL of this home is not running on a Unix socket"
            )

        async def find() -> list[int]:
            connection = await asyncpg.connect(
                host=info[1], port=info[2], user="postgres", database="digestd"
            )
            try:
                rows = await connection.fetch(
                    "SELECT pid FROM pg_stat_activity WHERE datname = 'digestd' AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend' AND query ILIKE $1 ORDER BY state = 'active' DESC",
                    like,
                )
            finally:
                await connection.close()
            return [int(r["pid"]) for r in rows]

        pids = asyncio.run(find())
        if not pids:
            raise LookupError(f"no backend running a query like {like!r}")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def close(self) -> None:
        for proc in self.procs:
            stop_process(proc, timeout=10)
        for log in self.logs:
            if log != subprocess.PIPE:
                log.close()
        info = self.postmaster()
        if info and pid_alive(info[0]):  # the embedded server our children started
            os.kill(info[0], signal.SIGINT)
            for _ in range(100):
                if not pid_alive(info[0]):
                    break
                time.sleep(0.1)


@dataclass
class Reply:
    status: int
    body: Any
    seconds: float
    size: int
    headers: httpx.Headers

    def errors(self) -> list[tuple[str, str]]:
        """(message, code) of every GraphQL error and of every typed *Error result."""
        found: list[tuple[str, str]] = []
        if not isinstance(self.body, dict):
            return found
        for error in self.body.get("errors") or []:
            found.append(
                (str(error.get("message")), str((error.get("extensions") or {}).get("code", "")))
            )

        def walk(value: Any) -> None:
            if isinstance(value, dict):
                if str(value.get("__typename", "")).endswith("Error"):
                    found.append(
                        (str(value.get("message")), str(value.get("code", value["__typename"])))
                    )
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(self.body.get("data"))
        return found


class GraphQLFailure(Exception):
    pass


@dataclass
class Serve:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def post(
        self,
        query: str | None = None,
        variables: dict[str, Any] | None = None,
        *,
        raw: bytes | None = None,
        token: str | None = WRITER,
        timeout: float = 60,
    ) -> Reply:
        content = (
            raw
            if raw is not None
            else json.dumps({"query": query, "variables": variables or {}}).encode()
        )
        headers = {"content-type": "application/json"} | (
            {"authorization": f"Bearer {token}"} if token else {}
        )
        started = time.monotonic()
        response = httpx.post(
            self.base + "/graphql", content=content, headers=headers, timeout=timeout
        )
        try:
            body = response.json()
        except ValueError:
            body = response.text[:500]
        return Reply(
            response.status_code,
            body,
            time.monotonic() - started,
            len(response.content),
            response.headers,
        )

    def data(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = WRITER
    ) -> dict[str, Any]:
        reply = self.post(query, variables, token=token)
        if not isinstance(reply.body, dict) or reply.body.get("errors") or reply.status >= 400:
            detail = (
                reply.body.get("errors", [{}])[0].get("message")
                if isinstance(reply.body, dict)
                else reply.body
            )
            raise GraphQLFailure(f"HTTP {reply.status}: {str(detail)[:160]}")
        return dict(reply.body["data"])

    def ingest(self, channel: str, messages: list[dict[str, Any]]) -> str:
        query = (
            "mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) "
            "{ __typename ... on IngestResult { channel { id } rejected } ... on InvalidInputError { message } } }"
        )
        channel_id = ""
        for start in range(0, len(messages), 2000):
            result = self.data(
                query, {"c": {"name": channel}, "m": messages[start : start + 2000]}
            )["ingestMessages"]
            if result["__typename"] != "IngestResult":
                raise GraphQLFailure(str(result))
            channel_id = result["channel"]["id"]
        return channel_id

    def trigger(self, channel_id: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
        query = (
            "mutation($c: ID!, $o: DigestOptions) { triggerDigest(channelId: $c, options: $o) "
            f"{{ __typename ... on DigestJob {{ {JOB} }} ... on NotFoundError {{ message }} ... on InvalidInputError {{ message }} }} }}"
        )
        job = self.data(query, {"c": channel_id, "o": options})["triggerDigest"]
        if job["__typename"] != "DigestJob":
            raise GraphQLFailure(f"triggerDigest: {job.get('message')}")
        return dict(job)

    def job(self, job_id: str) -> dict[str, Any]:
        return dict(
            self.data(f"query($i: ID!) {{ job(id: $i) {{ {JOB} }} }}", {"i": job_id})["job"]
        )

    def wait_job(
        self,
        job_id: str,
        timeout: float = 90,
        until: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Poll the job until `until` (default: a terminal status); transient errors (a database
        restarting) are retried until the deadline; returns the last state seen."""
        deadline, job = time.monotonic() + timeout, {"status": "UNKNOWN", "id": job_id}
        while time.monotonic() < deadline:
            try:
                job = self.job(job_id)
                if (until or (lambda j: j["status"] in TERMINAL))(job):
                    return job
            except (GraphQLFailure, httpx.HTTPError, KeyError, TypeError):
                pass
            time.sleep(0.4)
        return job

    def digest_job(
        self, channel_id: str, options: dict[str, Any] | None = None, timeout: float = 90
    ) -> dict[str, Any]:
        return self.wait_job(self.trigger(channel_id, options)["id"], timeout)


def describe(job: dict[str, Any]) -> str:
    stats = job.get("stats") or {}
    shown = "?" if stats.get("messages") is None else stats["messages"]
    text = f"job {job.get('id')} {job.get('status')}, {shown} msgs"
    if stats.get("chunksFailed"):
        text += f", {stats['chunksFailed']} chunk(s) failed"
    if stats.get("chunksOffline"):
        text += f", {stats['chunksOffline']} chunk(s) read offline"
    extra = job.get("resultMessage") or job.get("error")
    return text + (f" ({str(extra)[:70]})" if extra else "")


def messages(
    n: int, prefix: str, start: datetime, step: timedelta = timedelta(minutes=1), seed: int = 1
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "id": f"{prefix}{i}",
            "author": f"user{rng.randint(1, 9)}",
            "ts": (start + i * step).isoformat(),
            "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40))).capitalize()
            + ".",
        }
        for i in range(n)
    ]


def write_jsonl(
    path: Path,
    rows: Iterator[dict[str, Any]] | list[dict[str, Any]],
    extra: dict[str, Any] | None = None,
) -> Path:
    with path.open("w") as handle:
        for row in rows:
            handle.write(json.dumps({**row, **(extra or {})}) + "\n")
    return path


def day(d: int, hour: int = 0) -> datetime:
    return datetime(2024, 4, d, hour, tzinfo=UTC)


@dataclass
class Ctx:
    digestd: Path
    data: Path
    workdir: Path
    report: Report
    fake: FakeEndpoints
    homes: list[Home] = field(default_factory=list)
    shared: dict[str, Any] = field(default_factory=dict)

    def llm_env(self, mode: str, **extra: str) -> dict[str, str]:
        return {
            "DIGEST_LLM_BASE_URL": self.fake.url(mode),
            "DIGEST_LLM_API_KEY": "sk-fake-0123456789",
            "DIGEST_LLM_MAX_RETRIES": "1",
            "DIGESTD_RETRY_BASE_SECONDS": "0.5",
            **extra,
        }

    def cover_serve(self) -> Serve:
        """One serve on the `cover` fake endpoint, shared by sections 1 and 2."""
        if "cover" not in self.shared:
            self.shared["cover"] = Home(
                self, "coverage", self.llm_env("cover", DIGESTD_POLL_SECONDS="0.5")
            ).serve()
        return self.shared["cover"]  # type: ignore[no-any-return]


class Need(dict[str, Any]):
    """State shared by the cases of a group: a missing key says an earlier step failed."""

    def __missing__(self, key: str) -> Any:
        raise RuntimeError(f"needs {key!r}, which an earlier step did not produce")


COVERAGE = (
    "messageCount messageCoverage { messageCount firstMessageAt lastMessageAt catchUp since until "
    "leftOut { firstMessageId lastMessageId messageCount reason } }"
)


def digest_of(serve: Serve, digest_id: str | None, fields: str) -> dict[str, Any]:
    if not digest_id:
        raise RuntimeError("the job stored no digest")
    return dict(
        serve.data(f"query($i: ID!) {{ digest(id: $i) {{ {fields} }} }}", {"i": digest_id})[
            "digest"
        ]
    )


def uncovered(serve: Serve, channel_id: str) -> int:
    return int(
        serve.data(
            "query($i: ID!) { channel(id: $i) { uncoveredMessageCount } }", {"i": channel_id}
        )["channel"]["uncoveredMessageCount"]
    )


def count(job: dict[str, Any]) -> int:
    return int((job.get("stats") or {}).get("messages") or 0)


# --- section 1: coverage --------------------------------------------------------------------


def section1(ctx: Ctx) -> None:
    r, serve, s = ctx.report, ctx.cover_serve(), Need()

    def partial() -> tuple[str, bool]:
        rows = messages(40, "p", day(1))
        rows[22]["text"] += " FAILCHUNK"
        s["ch"] = serve.ingest("partial", rows)
        ctx.fake.fail = True
        s["j1"] = serve.digest_job(s["ch"], {"chunkTokens": 300})
        ctx.fake.fail = False
        s["j2"] = serve.digest_job(s["ch"])
        named = [w for w in s["j1"]["warnings"] if w["code"] == "CHUNKS_EXTRACTED_OFFLINE"]
        ok = (
            s["j1"]["status"] == "PARTIAL"
            and bool(named)
            and s["j2"]["status"] == "SUCCEEDED"
            and count(s["j2"]) == 0
        )
        return f"{describe(s['j1'])}; then {describe(s['j2'])}", ok

    def left_out() -> tuple[str, bool]:
        ranges = digest_of(serve, s["j1"]["digestId"], COVERAGE)["messageCoverage"]["leftOut"]
        failed = [x for x in ranges if x["reason"] == "chunk_failed" and x["messageCount"] > 0]
        shown = "; ".join(
            f"{x['messageCount']} msgs {x['firstMessageId']}..{x['lastMessageId']} {x['reason']}"
            for x in ranges
        )
        return f"leftOut: {shown or 'none'}", not failed

    def shown() -> tuple[str, bool]:
        cov = digest_of(serve, s["b1"]["digestId"], COVERAGE)["messageCoverage"]
        ok = (
            cov["messageCount"] == count(s["b1"]) == 20
            and bool(cov["firstMessageAt"] and cov["lastMessageAt"])
            and cov["catchUp"] is False
        )
        return (
            f"messageCount {cov['messageCount']} (job {count(s['b1'])}), {cov['firstMessageAt']}..{cov['lastMessageAt']}, catchUp {cov['catchUp']}",
            ok,
        )

    def backfill() -> tuple[str, bool]:
        ch = serve.ingest("backfill", messages(20, "b", day(10)))
        s["b1"] = first = serve.digest_job(ch)
        serve.ingest("backfill", messages(15, "old", day(5), seed=2))
        second = serve.digest_job(ch)
        return f"{describe(first)}; after backfill {describe(second)}", first[
            "status"
        ] == "SUCCEEDED" and count(second) == 15

    def clock() -> tuple[str, bool]:
        rows = messages(20, "k", day(12))
        ch = serve.ingest("clock", rows)
        first = serve.digest_job(ch)
        serve.ingest("clock", [dict(rows[-1], ts="2030-01-01T00:00:00+00:00")])
        serve.ingest("clock", messages(10, "late", day(12, 12), seed=3))
        second = serve.digest_job(ch)
        return f"{describe(first)}; after ts 2030 + 10 new: {describe(second)}", count(second) >= 10

    def window() -> tuple[str, bool]:
        s["w"] = serve.ingest("window", messages(50, "w", day(1), timedelta(hours=2.4)))
        job = serve.digest_job(s["w"], {"since": day(2).isoformat(), "until": day(4).isoformat()})
        return describe(job), job["status"] == "SUCCEEDED" and count(job) == 20

    def window_coverage() -> tuple[str, bool]:
        left = uncovered(serve, s["w"])
        job = serve.digest_job(s["w"])
        return f"uncoveredMessageCount {left}; next trigger: {describe(job)}", left == 50 and count(
            job
        ) == 50

    def idempotent() -> tuple[str, bool]:
        rows = messages(10, "i", day(15))
        rows[3]["text"] += " SLOWCHUNK"
        ch = serve.ingest("idem", rows)
        first, second = serve.trigger(ch), serve.trigger(ch)
        serve.wait_job(first["id"])
        return f"job {first['id']} then job {second['id']} ({second['status']})", first[
            "id"
        ] == second["id"]

    for key, body in (
        ("1.1", partial),
        ("1.2", left_out),
        ("1.3", backfill),
        ("1.7", shown),
        ("1.4", clock),
        ("1.5", window),
        ("1.6", window_coverage),
        ("1.8", idempotent),
    ):
        r.check(key, body)


# --- section 2: edits -----------------------------------------------------------------------


def section2(ctx: Ctx) -> None:
    r, serve, s = ctx.report, ctx.cover_serve(), Need()
    rows = messages(6, "e", day(20))
    original = (
        "The deploy command for the staging host is docker compose up -d --build web, and it must "
        "run before the release is tagged. "
    ) * 3
    rows[3]["text"] = original.strip()
    items = "knowledgeItems { title pointer { messageId charStart charEnd resolvedText } flags { code } }"

    def cited(fields: str) -> dict[str, Any]:
        found = digest_of(serve, s["job"]["digestId"], fields)["knowledgeItems"]
        item = next((i for i in found if (i.get("pointer") or {}).get("messageId") == "e3"), None)
        if item is None:
            raise RuntimeError("no knowledge item points into the edited message")
        return dict(item)

    def verbatim() -> tuple[str, bool]:
        s["ch"] = serve.ingest("edits", rows)
        s["job"] = serve.digest_job(s["ch"])
        before = cited(items)["pointer"]["resolvedText"]
        serve.ingest("edits", [dict(rows[3], text="Edited: never mind.")])
        after = cited(items)["pointer"]["resolvedText"]
        return f"before {before[:30]!r}, after the edit {after[:30]!r}", before == original[
            :60
        ] and after == before

    def revision() -> tuple[str, bool]:
        pointer = cited("knowledgeItems { pointer { messageId revision revisionText } }")["pointer"]
        text = str(pointer["revisionText"])
        return f"revision {pointer['revision']}, revisionText {text[:40]!r}", pointer[
            "revision"
        ] == 1 and text == original.strip()

    def flagged() -> tuple[str, bool]:
        codes = [f["code"] for f in cited(items)["flags"]]
        return f"flags {codes}", "source_edited" in codes

    def redigest() -> tuple[str, bool]:
        left = uncovered(serve, s["ch"])
        job = serve.digest_job(s["ch"])
        return f"uncoveredMessageCount {left}; next trigger: {describe(job)}", left == 1 and count(
            job
        ) == 1

    for key, body in (("2.1", verbatim), ("2.2", revision), ("2.3", flagged), ("2.4", redigest)):
        r.check(key, body)


# --- section 3: workers and shutdown --------------------------------------------------------


def section3_serve(ctx: Ctx) -> None:
    r, s = ctx.report, Need()
    ctx.fake.delay = 1.0
    home = Home(
        ctx,
        "crash-serve",
        ctx.llm_env(
            "slow",
            DIGEST_LLM_CONCURRENCY="1",
            DIGESTD_LEASE_SECONDS="6",
            DIGESTD_HEARTBEAT_SECONDS="2",
            DIGESTD_POLL_SECONDS="1",
        ),
    )

    def killed() -> tuple[str, bool]:
        s["serve"] = serve = home.serve()
        s["ch"] = serve.ingest("crash", messages(40, "c", day(1)))
        job = serve.trigger(s["ch"], {"chunkTokens": 300})
        serve.wait_job(job["id"], 30, until=lambda j: j["status"] == "RUNNING")
        time.sleep(2)
        pid = home.kill_backend()
        s["job"] = done = serve.wait_job(job["id"], 60)
        return f"killed backend {pid} mid-job; then {describe(done)}", done["status"] in (
            "SUCCEEDED",
            "PARTIAL",
        )

    def later() -> tuple[str, bool]:
        serve = s["serve"]
        serve.ingest("crash", messages(5, "more", day(2)))
        job = serve.trigger(s["ch"])
        if job["id"] == s["job"]["id"]:
            return f"returned the same job {job['id']} ({job['status']})", False
        done = serve.wait_job(job["id"], 60)
        s["alive"] = done["status"] == "SUCCEEDED"
        return describe(done), s["alive"]

    def ready() -> tuple[str, bool]:
        response = httpx.get(s["serve"].base + "/readyz", timeout=10)
        alive = s.get("alive", False)
        ok = (
            (response.status_code == 200)
            if alive
            else (response.status_code == 503 and "runner" in response.text)
        )
        return (
            f"runner {'works' if alive else 'dead'}; /readyz {response.status_code} {response.text[:80]}",
            ok,
        )

    for key, body in (("3.1", killed), ("3.2", later), ("3.3", ready)):
        r.check(key, body)
    home.close()


def section3_worker(ctx: Ctx) -> None:
    r, s = ctx.report, Need()
    ctx.fake.delay = 1.0
    home = Home(
        ctx,
        "crash-worker",
        ctx.llm_env(
            "slow",
            DIGEST_LLM_CONCURRENCY="1",
            DIGESTD_LEASE_SECONDS="6",
            DIGESTD_HEARTBEAT_SECONDS="2",
            DIGESTD_POLL_SECONDS="1",
        ),
    )

    def survives() -> tuple[str, bool]:
        serve = home.serve("--no-runner")
        job = serve.trigger(serve.ingest("wchan", messages(40, "w", day(1))), {"chunkTokens": 300})
        s["worker"] = worker = home.spawn("worker")
        serve.wait_job(job["id"], 30, until=lambda j: j["status"] == "RUNNING")
        kills = 0
        for _ in range(5):  # a burst, so that some reconnect lands while Postgres is restarting
            time.sleep(0.7)
            with contextlib.suppress(LookupError, OSError, asyncpg.PostgresError):
                home.kill_backend()
                kills += 1
        time.sleep(8)
        if worker.poll() is not None:
            return (
                f"{kills} backend(s) killed mid-job: worker exited with status {worker.returncode}",
                False,
            )
        done = serve.wait_job(job["id"], 60)
        alive = worker.poll() is None
        return (
            f"{kills} backend(s) killed mid-job: worker {'alive' if alive else 'exited'}; {describe(done)}",
            alive and done["status"] == "SUCCEEDED",
        )

    def sigterm() -> tuple[str, bool]:
        worker = s["worker"]
        if worker.poll() is not None:  # died in 3.4: a fresh one
            worker = home.spawn("worker")
            time.sleep(6)
        code = stop_process(worker, signal.SIGTERM, 30)
        return exit_code(code), code == 0

    for key, body in (("3.4", survives), ("3.9", sigterm)):
        r.check(key, body)
    home.close()


def big_jsonl(ctx: Ctx, n: int, channel: str) -> Path:
    path = ctx.workdir / f"{channel}-{n}.jsonl"
    if not path.exists():
        write_jsonl(
            path, messages(n, "m", day(1), timedelta(seconds=30), seed=7), {"channel": channel}
        )
    return path


def section3_healthz(ctx: Ctx) -> None:
    home = Home(ctx, "healthz")

    def latency() -> tuple[str, bool]:
        if (result := home.cli("import", str(big_jsonl(ctx, 30_000, "big")), timeout=300)).rc != 0:
            return f"import failed: {result.text[-200:]}", False
        serve = home.serve()
        channel = serve.data("{ channels { nodes { id name } } }")["channels"]["nodes"][0]["id"]
        job, started, worst, probes, polled = serve.trigger(channel), time.monotonic(), 0.0, 0, 0.0
        while time.monotonic() - started < 360 and job["status"] not in TERMINAL:
            before = time.monotonic()
            try:
                httpx.get(serve.base + "/healthz", timeout=60)
            except httpx.TimeoutException:
                pass
            worst, probes = max(worst, time.monotonic() - before), probes + 1
            if time.monotonic() - polled > 2:
                polled = time.monotonic()
                try:
                    job = serve.job(job["id"])
                except (httpx.HTTPError, GraphQLFailure):
                    pass
            time.sleep(0.1)
        took = time.monotonic() - started
        return f"max {worst:.2f} s over {probes} probes; {describe(job)} in {took:.0f} s", job[
            "status"
        ] == "SUCCEEDED" and worst < 1.0

    ctx.report.check("3.5", latency)
    home.close()


def section3_lease(ctx: Ctx) -> None:
    ctx.fake.delay = 1.0
    env = ctx.llm_env(
        "slow",
        DIGEST_LLM_CONCURRENCY="1",
        DIGESTD_LEASE_SECONDS="3",
        DIGESTD_HEARTBEAT_SECONDS="1",
        DIGESTD_POLL_SECONDS="0.5",
        DIGESTD_MAX_ATTEMPTS="2",
    )
    home = Home(ctx, "lease", env)

    def capped() -> tuple[str, bool]:
        serve = home.serve("--no-runner")
        job = serve.trigger(serve.ingest("lease", messages(40, "l", day(1))), {"chunkTokens": 300})
        for attempt in (1, 2):
            worker = home.spawn("worker")
            seen = serve.wait_job(
                job["id"],
                40,
                until=lambda j, attempt=attempt: (
                    j["status"] == "RUNNING" and j["attempts"] >= attempt
                ),
            )
            if seen["status"] != "RUNNING":
                return f"attempt {attempt} never ran: {describe(seen)}", False
            time.sleep(1.5)
            stop_process(worker, signal.SIGKILL)
        home.spawn("worker")
        final = serve.wait_job(job["id"], 45)
        ok = final["status"] == "FAILED" and str(final.get("error")).startswith("lease_expired")
        return (
            f"2 workers SIGKILLed; {describe(final)}, attempts {final.get('attempts')}/{final.get('maxAttempts')}",
            ok,
        )

    ctx.report.check("3.6", capped)
    home.close()


def section3_sigterm(ctx: Ctx) -> None:
    home, s = Home(ctx, "sigterm"), Need()

    def terminated() -> tuple[str, bool]:
        serve = home.serve()
        s["postmaster"] = home.postmaster()
        code = stop_process(serve.proc, signal.SIGTERM, 40)
        return exit_code(code), code == 0

    def stopped() -> tuple[str, bool]:
        pid = s["postmaster"][0]
        for _ in range(50):
            if not pid_alive(pid):
                return f"postmaster {pid} stopped", True
            time.sleep(0.2)
        return f"postmaster {pid} still running 10 s after serve exited", False

    for key, body in (("3.7", terminated), ("3.8", stopped)):
        ctx.report.check(key, body)
    home.close()


# --- section 4: imports ---------------------------------------------------------------------

DEEP, HUGE = "[" * 5000 + "]" * 5000, "9" * 5000


def outcome(result: Result, workdir: Path) -> str:
    if result.rc is None:
        return f"hung: killed after {result.seconds:.0f} s"
    line = next((row for row in result.out.splitlines() if row.startswith("imported")), "")
    line = re.sub(r"^imported \S+ ", "", line) or (result.err.strip().splitlines() or [""])[-1]
    line = re.sub(re.escape(str(workdir)) + r"/(\S*/)?", "", line)
    return (
        f"exit {result.rc}{' with a TRACEBACK' if 'Traceback' in result.text else ''}: {line[:90]}"
    )


def section4(ctx: Ctx) -> None:
    r, home = ctx.report, Home(ctx, "imports")
    serve, d = home.serve("--no-runner"), home.path

    def stored() -> dict[str, int]:
        nodes = serve.data("{ channels(first: 100) { nodes { name messageCount } } }")["channels"][
            "nodes"
        ]
        return {n["name"]: n["messageCount"] for n in nodes}

    def run(path: Path | str, timeout: float = 60) -> Result:
        return home.cli("import", str(path), timeout=timeout)

    def jsonl() -> tuple[str, bool]:
        good = [json.dumps({**m, "channel": "jsonl-good"}) for m in messages(1000, "j", day(1))]
        bad = [
            '{"id": "deep", "author": "a", "ts": "2024-04-01T00:00:00Z", "text": "x", "attachments": '
            + DEEP
            + "}",
            '{"id": ' + HUGE + ', "author": "a", "ts": "2024-04-01T00:00:00Z", "text": "big int"}',
        ]
        (d / "mixed.jsonl").write_text("\n".join(good[:500] + bad + good[500:]) + "\n")
        result, n = run(d / "mixed.jsonl"), stored().get("jsonl-good", 0)
        return (
            f"{outcome(result, ctx.workdir)}; {n} stored",
            result.rc == 0 and n == 1000 and " 2 rejected" in result.out,
        )

    def discord() -> tuple[str, bool]:
        good = [
            json.dumps(
                {
                    "id": m["id"],
                    "type": "Default",
                    "timestamp": m["ts"],
                    "content": m["text"],
                    "author": {"id": "u1", "name": m["author"]},
                }
            )
            for m in messages(1000, "d", day(1))
        ]
        bad = [
            '{"id": "deep", "timestamp": "2024-04-01T00:00:00Z", "content": "x", "author": {"name": "a"}, "embeds": '
            + DEEP
            + "}",
            '{"id": '
            + HUGE
            + ', "timestamp": "2024-04-01T00:00:00Z", "content": "x", "author": {"name": "a"}}',
        ]
        head = '{"guild": {"id": "1", "name": "guild"}, "channel": {"id": "2", "name": "discord-good"}, "messages": ['
        (d / "discord.json").write_text(head + ",".join(good[:500] + bad + good[500:]) + "]}")
        result, n = run(d / "discord.json"), stored().get("discord-good", 0)
        return (
            f"{outcome(result, ctx.workdir)}; {n} stored",
            result.rc == 0 and n == 1000 and " 2 rejected" in result.out,
        )

    def slack_folder(
        name: str, channels: str, files: dict[str, list[dict[str, Any]] | None]
    ) -> Path:
        folder = d / name
        folder.mkdir(parents=True)
        (folder / "channels.json").write_text(channels)
        (folder / "users.json").write_text('[{"id": "U1", "name": "ann"}]')
        for relative, rows in files.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            if rows is None:
                os.mkfifo(folder / relative)
            else:
                (folder / relative).write_text(json.dumps(rows))
        return folder

    def slack_rows(n: int, text: str = "") -> list[dict[str, Any]]:
        return [
            {
                "type": "message",
                "user": "U1",
                "text": text or m["text"],
                "ts": f"{1712000000 + i * 60}.000100",
            }
            for i, m in enumerate(messages(n, "s", day(1)))
        ]

    def slack() -> tuple[str, bool]:
        channels = (
            '[{"id": "C1", "name": "slack-good"}, {"id": "C2", "name": "deep", "purpose": '
            + DEEP
            + '}, {"id": '
            + HUGE
            + ', "name": "bigint"}]'
        )
        result = run(
            slack_folder("slack", channels, {"slack-good/2024-04-02.json": slack_rows(50)})
        )
        n = stored().get("slack-good", 0)
        return f"{outcome(result, ctx.workdir)}; {n} stored", result.rc == 0 and n == 50

    def slack_fifo() -> tuple[str, bool]:
        folder = slack_folder(
            "slackfifo",
            '[{"id": "C1", "name": "fifo-chan"}]',
            {"fifo-chan/2024-04-01.json": None, "fifo-chan/2024-04-02.json": slack_rows(5)},
        )
        result = run(folder, timeout=20)
        return outcome(result, ctx.workdir), result.rc == 2 and "Traceback" not in result.text

    def outside() -> tuple[str, bool]:
        slack_folder(
            "escape/outside",
            "[]",
            {"2024-04-01.json": slack_rows(3, "OUTSIDE-SECRET from outside the export")},
        )
        result = run(slack_folder("escape/export", '[{"id": "C9", "name": "../outside"}]', {}))
        leaked = {k: v for k, v in stored().items() if "outside" in k and v}
        return (
            f"{outcome(result, ctx.workdir)}; stored from outside: {leaked or 'nothing'}",
            result.rc not in (0, None) and not leaked,
        )

    def qmsum() -> tuple[str, bool | None]:
        found = sorted(ctx.data.glob("meetings/qmsum/*.json")) or sorted(
            ctx.data.rglob("*qmsum*/*.json")
        )
        if not found:
            return f"skipped: no QMSum JSON under {ctx.data}", None
        result = run(found[0])
        said = re.search(r"jsonl|json lines|format", result.text, re.I)
        return f"{found[0].name}: {outcome(result, ctx.workdir)}", result.rc == 1 and bool(said)

    def special(path: Path | str) -> tuple[str, bool]:
        result = run(path, timeout=20)
        said = re.search(r"fifo|pipe|device|not a regular|special", result.text, re.I)
        return outcome(result, ctx.workdir), result.rc == 2 and bool(
            said
        ) and "does not exist" not in result.text

    def fifo() -> tuple[str, bool]:
        os.mkfifo(d / "pipe.jsonl")
        return special(d / "pipe.jsonl")

    def utf16() -> tuple[str, bool]:
        lines = "".join(
            json.dumps({**m, "channel": "utf16"}) + "\n" for m in messages(20, "u", day(1))
        )
        (d / "utf16.jsonl").write_bytes(lines.encode("utf-16"))
        result = run(d / "utf16.jsonl")
        return outcome(result, ctx.workdir), "utf-16" in result.text.lower() or stored().get(
            "utf16"
        ) == 20

    def db_dies() -> tuple[str, bool]:
        proc = home.spawn("import", str(big_jsonl(ctx, 100_000, "dbdie")), capture=True)
        deadline, pid = time.monotonic() + 30, 0
        while not pid and proc.poll() is None and time.monotonic() < deadline:
            try:
                pid = home.kill_backend("%COPY%")
            except LookupError:
                time.sleep(0.05)
        result = finish(proc, 60)
        if not pid:
            return f"the import ended before the fault: {outcome(result, ctx.workdir)}", False
        lines = [line for line in result.err.splitlines() if line.strip()]
        return (
            f"killed backend {pid}: {outcome(result, ctx.workdir)}",
            result.rc is not None and "Traceback" not in result.text and len(lines) <= 2,
        )

    for key, body in (
        ("4.1", jsonl),
        ("4.2", discord),
        ("4.3", slack),
        ("4.4", slack_fifo),
        ("4.5", outside),
        ("4.6", qmsum),
        ("4.7", lambda: special("/dev/zero")),
        ("4.8", fifo),
        ("4.9", utf16),
        ("4.10", db_dies),
    ):
        r.check(key, body)
    home.close()


# --- section 5: hostile API requests --------------------------------------------------------


def judge(reply: Reply, allow_data: bool = False) -> tuple[str, bool]:
    """A clear client error: HTTP < 500, an error message without internals, not INTERNAL."""
    errors = reply.errors()
    if not errors:
        text = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)[:80]
        return f"HTTP {reply.status}, no error: {text[:80]}", allow_data and reply.status < 400
    message, code = errors[0]
    leak = any(INTERNALS.search(m.strip()) for m, _ in errors)
    ok = reply.status < 500 and not leak and all(c != "INTERNAL" for _, c in errors)
    return f"HTTP {reply.status} {code or '(no code)'}: {message[:90]}", ok


def section5(ctx: Ctx) -> None:
    r = ctx.report
    home = Home(ctx, "api", {"DIGESTD_API_TOKENS": f"reader:{READER},writer:{WRITER}"})
    serve = home.serve()
    serve.ingest("api", messages(5, "a", day(1)))
    ingest = (
        "mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) "
        "{ __typename ... on IngestResult { accepted } ... on InvalidInputError { message } } }"
    )
    items = "query($f: KnowledgeItemFilter, $a: String) { knowledgeItems(filter: $f, after: $a) { nodes { id } } }"
    cursor = base64.urlsafe_b64encode(
        json.dumps(["knowledgeItems", "2024-01-01T00:00:00+00:00", 2**70]).encode()
    ).decode()
    nested = (
        '{"query": '
        + json.dumps(ingest)
        + ', "variables": {"c": {"name": "api"}, "m": [{"id": "n1", "author": "a", '
        '"ts": "2024-01-01T00:00:00Z", "text": "x", "attachments": ['
        + '{"a": ' * 900
        + "{}"
        + "}" * 900
        + "]}]}}"
    )
    cases: list[tuple[str, dict[str, Any]]] = [
        ("5.1", {"query": "{ channels { } }"}),
        ("5.2", {"query": items, "variables": {"f": {"kind": "a\x00b"}}}),
        (
            "5.3",
            {
                "query": ingest,
                "variables": {"c": {"name": "nul\x00name"}, "m": []},
                "token": WRITER,
            },
        ),
        (
            "5.4",
            {
                "raw": b'{"query": "query($q: String) { knowledgeItems(filter: {query: $q}) { nodes { id } } }", "variables": {"q": "\\ud800x"}}'
            },
        ),
        ("5.5", {"query": items, "variables": {"a": cursor}}),
        (
            "5.6",
            {
                "query": "query($d: DateTime) { digests(filter: {since: $d}) { nodes { id } } }",
                "variables": {"d": "9999-12-31T23:59:59-14:00"},
            },
        ),
        ("5.7", {"query": items, "variables": {"f": {"query": "-" * 400}}, "allow_data": True}),
        ("5.8", {"raw": nested.encode(), "token": WRITER}),
        ("5.9", {"raw": b"null"}),
        (
            "5.10",
            {
                "raw": b'{"query": "query($n: Int) { channels(first: $n) { nodes { id } } }", "variables": {"n": '
                + HUGE.encode()
                + b"}}"
            },
        ),
        (
            "5.11",
            {
                "raw": b'{"query": "{ __typename }", "variables": {"x": '
                + b"[" * 5000
                + b"]" * 5000
                + b"}}"
            },
        ),
        (
            "5.14",
            {"query": "query($i: ID!) { digest(id: $i) { id } }", "variables": {"i": "\u0661"}},
        ),
        ("5.15", {"query": "query($i: ID!) { digest(id: $i) { id } }", "variables": {"i": "1_0"}}),
        ("5.16", {"query": "query($i: ID!) { digest(id: $i) { id } }", "variables": {"i": " 7 "}}),
    ]
    for key, spec in cases:
        allow = bool(spec.pop("allow_data", False))
        spec.setdefault("token", READER)
        r.check(key, lambda spec=spec, allow=allow: judge(serve.post(**spec), allow))  # type: ignore[misc]

    def flood() -> tuple[str, bool]:
        rows = [
            {"id": str(i), "author": "a", "ts": "2024-01-01T00:00:00Z", "text": "x" * 5}
            for i in range(300_000)
        ]
        raw = json.dumps(
            {"query": ingest, "variables": {"c": {"name": "flood"}, "m": rows}}
        ).encode()
        replies: list[Reply] = []
        thread = threading.Thread(
            target=lambda: replies.append(serve.post(raw=raw, token=READER, timeout=120))
        )
        thread.start()
        worst = 0.0
        while thread.is_alive():
            before = time.monotonic()
            httpx.get(serve.base + "/healthz", timeout=120)
            worst = max(worst, time.monotonic() - before)
            time.sleep(0.1)
        thread.join()
        text, ok = judge(replies[0])
        return (
            f"{len(raw) / 1e6:.0f} MB: {text[:60]} in {replies[0].seconds:.1f} s; /healthz max {worst:.2f} s",
            ok and replies[0].seconds < 2 and worst < 1,
        )

    def aliases() -> tuple[str, bool]:
        text = "\n".join(
            " ".join(random.Random(i).choice(WORDS) for _ in range(12)) for i in range(20_000)
        )
        added = serve.data(
            "mutation($t: String!) { ingestDocument(input: {text: $t}) { __typename ... on Document { id } ... on InvalidInputError { message } } }",
            {"t": text},
        )
        doc = added["ingestDocument"].get("id") or "1"
        query = (
            "{ "
            + " ".join(f'a{i}: document(id: "{doc}") {{ canonicalText }}' for i in range(30))
            + " }"
        )
        reply = serve.post(query, token=READER, timeout=300)
        said, _ = judge(reply)
        return (
            f"{len(text) / 1e6:.1f} MB text: {reply.size / 1e6:.1f} MB response in {reply.seconds:.1f} s; {said[:70]}",
            bool(reply.errors()) and reply.size < 5e6,
        )

    def request_id() -> tuple[str, bool]:
        header = serve.post("{ channels { } }", token=READER).headers.get("x-request-id")
        return f"X-Request-Id: {header}", bool(header)

    def log() -> tuple[str, bool]:
        text = serve.log.read_text(errors="replace")
        found = re.findall(r"^\w+(?:Error|Exception): .*$", text, re.M)
        return (
            f"{text.count('Traceback')} tracebacks{': ' + found[0][:70] if found else ''}",
            "Traceback" not in text,
        )

    for key, body in (("5.12", flood), ("5.13", aliases), ("5.17", request_id), ("5.18", log)):
        r.check(key, body)
    home.close()


# --- section 6: local and odd LLM endpoints -------------------------------------------------


def section6(ctx: Ctx) -> None:
    r, s = ctx.report, Need()
    llama = Home(
        ctx,
        "llama",
        ctx.llm_env(
            "llama8k",
            DIGEST_MAP_MODEL="local-llama",
            DIGEST_REDUCE_MODEL="local-llama",
            DIGESTD_MAX_ATTEMPTS="2",
        ),
    )

    def context() -> tuple[str, bool]:
        serve = llama.serve()
        s["job"] = job = serve.digest_job(
            serve.ingest("llama", messages(300, "l", day(1), seed=5)), timeout=240
        )
        return f"{describe(job)}; {ctx.fake.overflows} context-length 400s", job[
            "status"
        ] == "SUCCEEDED"

    def defaulted() -> tuple[str, bool]:
        warnings = [w for w in s["job"]["warnings"] if w["code"] == "LIMITS_DEFAULTED"]
        text = " ".join(w["message"] for w in warnings)
        return text[:110] or "no LIMITS_DEFAULTED warning", "DIGEST_MAP_CONTEXT_TOKENS" in text

    def html() -> tuple[str, bool]:
        home = Home(ctx, "html", ctx.llm_env("html", DIGESTD_MAX_ATTEMPTS="1"))
        serve = home.serve()
        job = serve.digest_job(serve.ingest("html", messages(20, "h", day(1))), timeout=120)
        home.close()
        said = " ".join(
            [str(job.get("error")), str(job.get("resultMessage"))]
            + [w["message"] for w in job["warnings"]]
        )
        return describe(job)[:110], job[
            "status"
        ] in TERMINAL and "AttributeError" not in said and "html" in said.lower()

    def known() -> tuple[str, bool]:
        home = Home(ctx, "known", ctx.llm_env("jitter"))
        serve, runs = home.serve(), []
        for prefix in ("x", "y"):
            job = serve.digest_job(
                serve.ingest(f"known-{prefix}", messages(40, prefix, day(1), seed=9)),
                {"chunkTokens": 300},
            )
            titles = [
                i["title"]
                for i in digest_of(serve, job["digestId"], "knowledgeItems { title }")[
                    "knowledgeItems"
                ]
            ]
            runs.append(sorted(titles, key=lambda t: int(re.sub(r"\D.*", "", t[1:]) or 0)))
        home.close()
        differ = [f"{a} / {b}" for a, b in zip(*runs, strict=False) if a != b]
        shown = (
            f"{len(differ)} of {len(runs[0])} items differ, e.g. {differ[0]}"
            if differ
            else f"identical: {'; '.join(runs[0][-3:])}"
        )
        return shown, runs[0] == runs[1] and len(runs[0]) >= 4

    for key, body in (("6.1", context), ("6.2", defaulted), ("6.3", html), ("6.4", known)):
        r.check(key, body)
    llama.close()


# --- section 7: pinned installs -------------------------------------------------------------


def section7(ctx: Ctx) -> None:
    import tomllib

    r = ctx.report
    candidates = [*ROOT.glob("*"), *ROOT.glob("[!.]*/*"), *ROOT.glob(".ci/*")]  # not .venv or .git
    files = sorted(
        str(p.relative_to(ROOT))
        for p in candidates
        if p.is_file()
        and re.search(r"constraint|(^|[._-])lock([._-]|$)|^requirements", p.name, re.I)
    )

    def ranges() -> tuple[str, bool]:
        deps: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "dependencies"
        ]
        open_ended = [d for d in deps if not re.search(r"<|==|~=", d)]
        graphql = any(re.match(r"graphql[-_]core", d, re.I) for d in deps)
        return (
            f"{len(deps)} deps, {len(open_ended)} without an upper bound ({', '.join(open_ended[:3])}); "
            f"graphql-core {'declared' if graphql else 'undeclared'}"
        ), not open_ended and graphql

    def used() -> tuple[str, bool]:
        readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()
        both = [f for f in files if Path(f).name in readme and Path(f).name in ci]
        upgrade = bool(re.search(r"upgrad", readme, re.I))
        return f"README+CI use: {both or 'none'}; README explains upgrading: {upgrade}", bool(
            both
        ) and upgrade

    r.check("7.1", ranges)
    r.check("7.2", lambda: (f"files: {files or 'none'}", bool(files)))
    r.check("7.3", used)


# --- main -----------------------------------------------------------------------------------

GROUPS: list[tuple[str, Callable[[Ctx], None]]] = [
    ("1", section1),
    ("2", section2),
    ("3", section3_serve),
    ("3", section3_worker),
    ("3", section3_healthz),
    ("3", section3_lease),
    ("3", section3_sigterm),
    ("4", section4),
    ("5", section5),
    ("6", section6),
    ("7", section7),
]


def run_group(ctx: Ctx, name: str, group: Callable[[Ctx], None], budget: float) -> str | None:
    """Run one group in a thread with a time budget; the error that stopped it, if any."""
    failure: list[str] = []

    def guarded() -> None:
        try:
            group(ctx)
        except Exception as error:  # noqa: BLE001 - printed, and the group counts as failed
            traceback.print_exc(file=sys.stderr)
            failure.append(f"{type(error).__name__}: {error}")

    thread = threading.Thread(target=guarded, daemon=True)
    thread.start()
    thread.join(budget)
    return (
        f"{name} exceeded its {budget:.0f} s budget"
        if thread.is_alive()
        else (failure[0] if failure else None)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--digestd", default=str(ROOT / ".venv" / "bin" / "digestd"), help="the digestd command"
    )
    parser.add_argument(
        "--data", default=str(ROOT.parent / "shared" / "data"), help="real data (QMSum)"
    )
    parser.add_argument(
        "--only", help="sections or groups to run, e.g. 1,3 or section3_lease (default: all)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes and logs")
    args = parser.parse_args()
    digestd = Path(args.digestd).absolute()
    if not os.access(digestd, os.X_OK):
        parser.error(f"{digestd} is not an executable digestd (pass --digestd)")
    only = set(args.only.replace(" ", "").split(",")) if args.only else None
    chosen = [
        (section, group)
        for section, group in GROUPS
        if only is None or {section, group.__name__} & only
    ]
    sections = {section for section, _ in chosen} if only else None
    for name in ("NO_PROXY", "no_proxy"):  # the fake endpoint and the servers are local
        os.environ[name] = ",".join(filter(None, [os.environ.get(name), "127.0.0.1", "localhost"]))
    workdir = Path(tempfile.mkdtemp(prefix="replay-resilience-"))
    ctx = Ctx(digestd, Path(args.data).absolute(), workdir, Report(), FakeEndpoints())
    started, stops = time.monotonic(), {}
    try:
        for section, group in chosen:
            print(
                f"[{time.monotonic() - started:5.0f}s] {group.__name__}",
                file=sys.stderr,
                flush=True,
            )
            if (stop := run_group(ctx, group.__name__, group, 420)) is not None:
                stops[section] = stop
    finally:
        for home in ctx.homes:
            home.close()
        ctx.fake.close()
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    for key, row in ctx.report.rows.items():
        if row.observed == "not run" and key.split(".")[0] in stops:
            row.observed, row.ok = f"not reached: {stops[key.split('.')[0]]}", False
    print(ctx.report.table(sections))
    shown = [
        row
        for key, row in ctx.report.rows.items()
        if sections is None or key.split(".")[0] in sections
    ]
    print(
        f"\n{sum(r.ok is True for r in shown)} PASS, {sum(r.ok is False for r in shown)} FAIL, "
        f"{sum(r.ok is None for r in shown)} not run or skipped; {time.monotonic() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
