"""Helpers for the document tests: the real fixtures under ../shared/data/docs and a tiny HTTP
server on 127.0.0.1 for fetch tests (the only address those tests ever contact)."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from runner.documents.fetch import Resolver

DOCS_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "docs"
HTML_DIR = DOCS_DIR / "html" / "readability"
PDF_DIR = DOCS_DIR / "pdf"
PDF_PASSWORDS = {
    "tricky_encrypted_aes256_r6-user-password.pdf": "asdfzxcv",
    "tricky_encrypted_libreoffice-writer-password.pdf": "openpassword",
}


def html_pages() -> list[str]:
    return (
        sorted(p.parent.name for p in HTML_DIR.glob("*/source.html")) if HTML_DIR.is_dir() else []
    )


def pdf_files() -> list[str]:
    return sorted(p.name for p in PDF_DIR.glob("*.pdf")) if PDF_DIR.is_dir() else []


def docs_file(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (real data lives in ../shared/data beside the repo)")
    return path


@dataclass
class Route:
    """What the server answers on one path."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None  # sent one by one with `delay` seconds between them
    delay: float = 0.0


@dataclass
class LocalServer:
    port: int
    routes: dict[str, Route]
    seen_hosts: list[str]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


def _handler(routes: dict[str, Route], seen_hosts: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen_hosts.append(self.headers.get("Host", ""))
            route = routes.get(self.path)
            if route is None:
                self.send_error(404)
                return
            self.send_response(route.status)
            for name, value in route.headers.items():
                self.send_header(name, value)
            if route.chunks is None:
                self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            try:
                if route.chunks is None:
                    self.wfile.write(route.body)
                    return
                for piece in route.chunks:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(route.delay)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as the size and time limits tell it to

    return Handler


@contextmanager
def local_server(
    routes: dict[str, Route], tls: ssl.SSLContext | None = None
) -> Iterator[LocalServer]:
    seen_hosts: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes, seen_hosts))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=lambda: server.serve_forever(poll_interval=0.02), daemon=True)
    thread.start()
    try:
        yield LocalServer(port=server.server_address[1], routes=routes, seen_hosts=seen_hosts)
    finally:
        server.shutdown()
        server.server_close()


def static_resolver(table: dict[str, list[str]]) -> Resolver:
    """A DNS stand-in: names map to fixed addresses, nothing touches the network."""

    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown test host {host}")
        return table[host]

    return resolve
