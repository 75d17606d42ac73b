"""Logging of the `digestd` commands: one line per event on stderr, as text or as JSON.

Every line says which request it belongs to (`request_id`, set by server/request_id.py for the
request being served, `-` elsewhere), so an operator can follow one request through the log.
`DIGESTD_LOG_FORMAT=json` writes one JSON object per line for log collectors.

Library retries are expected events, not faults: asyncpg's pool logs each failed attempt to
restore its connection floor (the database restarting, say) as a warning *with a traceback*,
which would put stack traces in front of an operator whose import or worker is doing exactly
what it should. Below DEBUG verbosity such records keep their message and the exception's class
on one line; `-v` shows everything.
"""

from __future__ import annotations

import errno
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["text", "json"]

# The request being served by this task (asyncio copies context into each task it starts).
current_request_id: ContextVar[str] = ContextVar("digestd_request_id", default="-")

ACCESS_LOGGER = "digestd.access"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"


class RequestIdFilter(logging.Filter):
    """Puts the current request's id on every record (`%(request_id)s`, the JSON field)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


class OneLineLibraryRetries(logging.Filter):
    """Folds the traceback of a library's warning into its exception class name."""

    LIBRARIES = ("asyncpg",)

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.exc_info
            and record.levelno < logging.ERROR
            and record.name.split(".", 1)[0] in self.LIBRARIES
        ):
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()} ({type(error).__name__})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


class CollapseRepeats(logging.Filter):
    """Lets through one record of a repeating kind per interval, on one line, saying how many
    more of that kind were held back since. Out of descriptors, asyncio logs a traceback for
    every failed `accept()`, thousands a second (51 MB in 11 s); uvicorn a line per request over
    its concurrency limit; digestd a line per WebSocket over a cap. The first says what
    happened; the count says how often."""

    def __init__(self, interval: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self.last_shown: dict[str, float] = {}
        self.held_back: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = repeating_kind(record)
        if kind is None:
            return True
        now = self.clock()
        shown = self.last_shown.get(kind)
        if shown is not None and now - shown < self.interval:
            self.held_back[kind] += 1
            return False
        self.last_shown[kind] = now
        line = record.getMessage().splitlines()[0]
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            line += f" ({type(error).__name__}: {getattr(error, 'strerror', None) or error})"
        held = self.held_back.pop(kind, 0)
        if held and shown is not None:
            line += f"; {held} more like it in the last {now - shown:.0f}s"
        record.msg, record.args = line, None
        record.exc_info = record.exc_text = None
        return True


# errno values of an accept() that failed for want of resources (not of the client's doing).
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def repeating_kind(record: logging.LogRecord) -> str | None:
    """Which kind of flood line `record` is (see CollapseRepeats), or None."""
    error = record.exc_info[1] if record.exc_info else None
    if record.name == "asyncio" and (
        str(record.msg).startswith("socket.accept() out of system resource")
        or (isinstance(error, OSError) and error.errno in _OUT_OF_RESOURCES)
    ):
        return "accept"
    if record.name == "uvicorn.error" and record.msg == "Exceeded concurrency limit.":
        return "concurrency"
    if record.name == "server.connection_limits" and str(record.msg).startswith(
        "websocket.refused"
    ):
        return "websocket cap"
    return None


# The loggers whose floods CollapseRepeats folds (records are filtered where they are logged).
REPEATING_LOGGERS = ("asyncio", "uvicorn.error", "server.connection_limits")


def collapse_repeats() -> None:
    """Install one CollapseRepeats on each of REPEATING_LOGGERS (again: replacing it)."""
    shared = CollapseRepeats()
    for name in REPEATING_LOGGERS:
        target = logging.getLogger(name)
        for old in [f for f in target.filters if isinstance(f, CollapseRepeats)]:
            target.removeFilter(old)
        target.addFilter(shared)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and for a record
    with an exception its class and traceback (only ERROR records carry one by then)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        if record.exc_info and record.exc_info[1] is not None:
            entry["error_class"] = type(record.exc_info[1]).__name__
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(verbose: bool, log_format: LogFormat = "text") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    handler.addFilter(RequestIdFilter())
    if not verbose:
        handler.addFilter(OneLineLibraryRetries())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
    collapse_repeats()  # even with -v: a traceback per failed accept() is no more use than one


def enable_access_log() -> None:
    """`serve` logs one INFO line per HTTP request (server/access_log.py) whatever the level."""
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)
