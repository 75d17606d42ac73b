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

import json
import logging
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
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RequestIdFilter())
    if not verbose:
        handler.addFilter(OneLineLibraryRetries())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)


def enable_access_log() -> None:
    """`serve` logs one INFO line per HTTP request (server/access_log.py) whatever the level."""
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)
