"""What the `digestd` commands that open the database share: the runtime opened and closed
around a command with SIGTERM/SIGINT as a graceful stop, the channel a CHANNEL argument names,
and a --since/--until window checked before anything is opened."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any

from db import channels as channel_queries
from runner.core import offload
from runner.triggers import TriggerRefused, channel_digest_options
from schema.types.ids import channel_row_id
from server.runtime import Runtime
from server.settings import Settings

# What a command runs once the runtime is open; its exit status.
Body = Callable[[Runtime], Coroutine[Any, Any, int]]


async def with_runtime(settings: Settings, body: Body) -> int:
    """Open the runtime, run `body(runtime)`, close it, with SIGTERM/SIGINT as a graceful stop:
    `runtime.stopping` is set, and a body that does not watch it (import, add-doc, migrate) is
    cancelled. Either way the runtime closes (stopping the embedded server) and the exit is 0."""
    loop = asyncio.get_running_loop()
    runtime = Runtime(settings)
    current = asyncio.current_task()
    assert current is not None
    body_task: asyncio.Task[int] | None = None

    def on_signal(signum: signal.Signals) -> None:
        if runtime.stopping.is_set():
            return
        print(f"digestd: {signum.name}: stopping", file=sys.stderr)
        runtime.stopping.set()
        if body_task is not None and not getattr(body, "watches_stopping", False):
            body_task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not main thread
            loop.add_signal_handler(signum, on_signal, signum)
    try:
        await runtime.open()
        if runtime.stopping.is_set():
            return 0
        body_task = asyncio.create_task(body(runtime))
        try:
            return await body_task
        except asyncio.CancelledError:
            if not runtime.stopping.is_set() or current.cancelling():
                raise
            return 0
    finally:
        offload.shutdown()  # abandoned CPU work must not hold the exit
        await runtime.close()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)


def watches_stopping(body: Body) -> Body:
    """Mark a body that stops by itself on `runtime.stopping` (it is not cancelled)."""
    setattr(body, "watches_stopping", True)  # noqa: B010 - a function attribute mypy cannot type
    return body


async def find_channel(runtime: Runtime, name: str, server: str | None) -> int | None:
    async with runtime.pool.acquire() as connection:
        # A name spelling an id (the API's global id, or a numeric one) is looked up as the id
        # first, read as the API reads ids (str.isdigit would take "²", which int() refuses).
        row_id = channel_row_id(name)
        if row_id is not None:
            row = await channel_queries.channel_by_id(connection, row_id)
            if row is not None:
                return int(row.id)
        rows = await channel_queries.channels_by_name(connection, name, server)
    if len(rows) > 1:
        raise ValueError(f"several channels are named {name!r}; pass --server or the channel id")
    return int(rows[0].id) if rows else None


async def channel_named(runtime: Runtime, name: str, server: str | None) -> int:
    """The channel a command argument names; ValueError with the line to print otherwise."""
    channel_id = await find_channel(runtime, name, server)
    if channel_id is None:
        raise ValueError(f"no channel {name!r}")
    return channel_id


def catch_up_window(
    since: str | None, until: str | None
) -> tuple[datetime | None, datetime | None]:
    """--since/--until as a catch-up window, checked as the API checks it; ValueError with a
    one-line message, before anything is opened."""
    bounds: dict[str, datetime | None] = {"since": None, "until": None}
    for name, text in (("since", since), ("until", until)):
        if text is None:
            continue
        try:
            bounds[name] = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"--{name} {text!r} is not an ISO 8601 date or time") from None
    try:
        channel_digest_options(since=bounds["since"], until=bounds["until"])
    except TriggerRefused as refused:
        raise ValueError(refused.message.replace("options.", "--")) from None
    return bounds["since"], bounds["until"]
