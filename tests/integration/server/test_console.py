"""The console's page and modules come from digestd: / is served without a token (the API behind
it still asks for one), every module it imports is in the package and names no other host, its
policy allows scripts, styles and connections to digestd only and requires Trusted Types, and no
script parses HTML from a string (chat and document text reaches the page as text only).
tests/e2e/server/console/test_console.py drives it in Chromium."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from server.app import AppOptions, create_app
from server.console import page_policy
from server.settings import Settings
from tests.support.paths import REPO_ROOT
from tests.support.servers import running_server

CONSOLE = REPO_ROOT / "server" / "static" / "console"
IMPORT = re.compile(r"""^import\s[^;]*?from\s+"(\.{1,2}/[^"]+)";""", re.MULTILINE | re.DOTALL)
HTML_SINKS = re.compile(
    r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|DOMParser"
)


@pytest.fixture
async def api(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(update={"digestd_api_tokens": SecretStr("reader:reader-token-1")})
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield http


def modules() -> list[Path]:
    return sorted(CONSOLE.rglob("*.js"))


async def test_the_page_is_served_without_a_token_and_the_api_is_not(
    api: httpx.AsyncClient,
) -> None:
    page = await api.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "://" not in re.sub(r"<!--.*?-->", "", page.text, flags=re.DOTALL), (
        "the page names another host"
    )
    policy = page.headers["content-security-policy"]
    host = api.base_url.netloc.decode()
    assert policy == page_policy(host)
    assert "script-src 'self';" in policy and "unsafe" not in policy
    assert f"connect-src 'self' ws://{host} wss://{host};" in policy
    assert "require-trusted-types-for 'script'" in policy and "default-src 'none'" in policy
    assert (await api.post("/", json={})).status_code == 405
    refused = await api.post("/graphql", json={"query": "{ channels { nodes { id } } }"})
    assert refused.status_code == 401


async def test_every_module_the_page_loads_is_served(api: httpx.AsyncClient) -> None:
    page = (await api.get("/")).text
    assets = re.findall(r'(?:src|href)="(/static/console/[^"]+)"', page)
    assert assets == ["/static/console/console.css", "/static/console/app.js"]
    reached: set[str] = set()
    pending = ["/static/console/app.js"]
    while pending:
        url = pending.pop()
        if url in reached:
            continue
        reached.add(url)
        served = await api.get(url)
        assert served.status_code == 200, url
        assert served.headers["content-type"].startswith("text/javascript"), url
        base = url.rsplit("/", 1)[0]
        for relative in IMPORT.findall(served.text):
            resolved = (
                str(Path(base, relative).resolve())
                if relative.startswith("../")
                else f"{base}/{relative[2:]}"
            )
            pending.append(resolved)
    on_disk = {f"/static/console/{p.relative_to(CONSOLE).as_posix()}" for p in modules()}
    assert reached == on_disk, "a module is unused or an import is missing"
    assert (await api.get("/static/console/console.css")).status_code == 200


def test_the_scripts_parse_no_html_and_name_no_other_host() -> None:
    assert len(modules()) >= 9
    for module in modules():
        source = module.read_text(encoding="utf-8")
        assert not HTML_SINKS.search(source), f"{module.name} uses an HTML string sink"
        assert "http://" not in source and "https://" not in source, f"{module.name} names a host"
        assert len(source.splitlines()) < 400, module.name


def test_the_policy_names_only_a_plain_host() -> None:
    assert "ws://127.0.0.1:8080 wss://127.0.0.1:8080" in page_policy("127.0.0.1:8080")
    assert "ws://[::1]:8080" in page_policy("[::1]:8080")
    for hostile in ("evil.example; script-src *", "a b", "", None):
        assert "connect-src 'self';" in page_policy(hostile), hostile
