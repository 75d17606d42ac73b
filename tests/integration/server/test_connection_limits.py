"""The parts of the connection bounds, each on its own: the WebSocket caps per client address
and per process against the real app, the connection limit read from RLIMIT_NOFILE in a real
child process, and the log filter that folds a flood of accept errors into one line."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import sys
from contextlib import AsyncExitStack

import asyncpg
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from server.app import AppOptions, create_app
from server.logs import CollapseRepeats
from server.settings import Settings
from tests.support.servers import running_server

PROTOCOL = Subprotocol("graphql-transport-ws")


async def acknowledged(base_url: str, stack: AsyncExitStack) -> ClientConnection:
    ws = await stack.enter_async_context(
        connect(
            base_url.replace("http://", "ws://") + "/graphql",
            subprotocols=[PROTOCOL],
            open_timeout=10,
        )
    )
    await ws.send(json.dumps({"type": "connection_init"}))
    assert json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"type": "connection_ack"}
    return ws


async def refused_with(base_url: str) -> tuple[int, str]:
    async with connect(
        base_url.replace("http://", "ws://") + "/graphql", subprotocols=[PROTOCOL], open_timeout=10
    ) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code, closed.value.rcvd.reason


@pytest.mark.parametrize(
    ("per_process", "per_client", "said"), [(10, 2, "from this address"), (2, 10, "to this server")]
)
async def test_a_websocket_over_a_cap_is_closed_with_1013(
    db: asyncpg.Pool, settings: Settings, per_process: int, per_client: int, said: str
) -> None:
    capped = settings.model_copy(
        update={
            "digestd_max_websockets": per_process,
            "digestd_max_websockets_per_client": per_client,
        }
    )
    app = create_app(capped, AppOptions(run_workers=0))
    async with running_server(app) as base_url, AsyncExitStack() as stack:
        first = await acknowledged(base_url, stack)
        await acknowledged(base_url, stack)
        code, reason = await refused_with(base_url)
        assert code == 1013 and said in reason and "at most 2" in reason
        await first.close()  # a place is free again
        for _ in range(50):
            try:
                await acknowledged(base_url, stack)
                break
            except ConnectionClosed:
                await asyncio.sleep(0.1)  # the server has not yet seen the close
        else:
            raise AssertionError("the freed place was never given again")


def accept_error() -> logging.LogRecord:
    """The record asyncio logs for each accept() that fails with EMFILE."""
    try:
        raise OSError(errno.EMFILE, "Too many open files")
    except OSError:
        exc_info = sys.exc_info()
    return logging.LogRecord(
        "asyncio",
        logging.ERROR,
        __file__,
        1,
        "socket.accept() out of system resource\nsocket: <fd=8>",
        None,
        exc_info,
    )


def test_a_flood_of_accept_errors_is_one_line_per_interval() -> None:
    now = [100.0]
    folding = CollapseRepeats(interval=10, clock=lambda: now[0])
    passed = [record for record in (accept_error() for _ in range(5000)) if folding.filter(record)]
    assert len(passed) == 1 and passed[0].exc_info is None
    assert (
        passed[0].getMessage()
        == "socket.accept() out of system resource (OSError: Too many open files)"
    )
    now[0] += 11
    later = accept_error()
    assert folding.filter(later) and "4999 more like it in the last 11s" in later.getMessage()
    refused = logging.LogRecord(
        "server.connection_limits",
        logging.WARNING,
        __file__,
        1,
        "websocket.refused client=%s reason=%s",
        ("127.0.0.1", "too many"),
        None,
    )
    assert folding.filter(refused) and not folding.filter(refused)  # a kind of its own, folded too
    other = logging.LogRecord(
        "asyncio", logging.ERROR, __file__, 1, "Task exception was never retrieved", None, None
    )
    assert folding.filter(other) and other.getMessage() == "Task exception was never retrieved"
