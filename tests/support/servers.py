"""A live HTTP server inside the test's own event loop (an ASGI app served by uvicorn on a free
loopback port), and a DNS resolver stub that points a name at any address."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def running_server(app: object) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free loopback port; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")  # type: ignore[arg-type]
    )
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def resolving_to(address: str) -> tuple[list[str], Callable[[str, int], Awaitable[list[str]]]]:
    """A DNS resolver (runner.documents.fetch.Resolver) answering `address` for every name, and
    the names it was asked: points a destination at an address the outbound policy judges."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return [address]

    return asked, resolve
