"""The GraphiQL page is digestd's own: everything it loads is served from /static (vendored, in
the package), it names no other host, its policy lets the browser load nothing else, and with
tokens on the page loads without one while the API behind it does not answer without one.
tests/e2e/server/test_browser.py drives it in Chromium."""

from __future__ import annotations

import re
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.paths import REPO_ROOT
from tests.support.servers import running_server

HTML = {"accept": "text/html,application/xhtml+xml"}


@pytest.fixture
async def api(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(update={"digestd_api_tokens": SecretStr("reader:reader-token-1")})
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield http


async def test_the_page_and_its_files_come_from_digestd(api: httpx.AsyncClient) -> None:
    page = await api.get("/graphql", headers=HTML)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "://" not in re.sub(r"<!--.*?-->", "", page.text, flags=re.DOTALL), (
        "the page names another host"
    )
    policy = page.headers["content-security-policy"]
    assert (
        "default-src 'self'" in policy
        and "script-src 'self';" in policy
        and "connect-src 'self'" in policy
    )
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert len(assets) == 8, assets
    for asset in assets:
        served = await api.get(asset)
        assert served.status_code == 200 and len(served.content) > 100, asset
    graphiql = await api.get("/static/graphiql/graphiql.min.js")
    assert graphiql.headers["content-type"].startswith(
        ("text/javascript", "application/javascript")
    )
    assert b"createFetcher" in graphiql.content


async def test_the_page_may_open_subscriptions_to_its_own_host_only(api: httpx.AsyncClient) -> None:
    host = str(api.base_url.netloc.decode())
    policy = (await api.get("/graphql", headers=HTML)).headers["content-security-policy"]
    assert f"connect-src 'self' ws://{host} wss://{host};" in policy
    for hostile in ("evil.example; script-src *", "*", "a b"):
        policy = (await api.get("/graphql", headers={**HTML, "host": hostile})).headers[
            "content-security-policy"
        ]
        assert (
            "connect-src 'self';" in policy and "script-src 'self';" in policy and "*" not in policy
        ), hostile
    script = (await api.get("/static/graphiql-page.js")).text
    assert "subscriptionUrl" in script and '"ws:"' in script


async def test_with_tokens_the_page_loads_without_one_and_the_api_does_not(
    api: httpx.AsyncClient,
) -> None:
    # The page keeps its query in the URL as `q`: a reload of it still gets the page.
    for params in ({}, {"q": "{ channels { nodes { id } } }"}):
        page = await api.get("/graphql", params=params, headers=HTML)
        assert page.status_code == 200 and "graphiql-page.js" in page.text, params
    ran = await api.get("/graphql", params={"query": "{ channels { nodes { id } } }"}, headers=HTML)
    assert ran.status_code == 401
    posted = await api.post("/graphql", json={"query": "{ channels { nodes { id } } }"})
    assert posted.status_code == 401
    authorized = await api.post(
        "/graphql",
        json={"query": "{ channels { nodes { id } } }"},
        headers={"authorization": "Bearer reader-token-1"},
    )
    assert authorized.json() == {"data": {"channels": {"nodes": []}}}


def test_a_non_editable_install_carries_every_static_file() -> None:
    """setuptools ships only the files package-data names: each file under server/static must
    match one of its patterns."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["server"]
    files = [
        p.relative_to(REPO_ROOT / "server")
        for p in (REPO_ROOT / "server" / "static").rglob("*")
        if p.is_file()
    ]
    assert len(files) >= 13
    for file in files + [Path("graphiql.html")]:
        path = PurePosixPath(file.as_posix())
        assert any(
            len(path.parts) == len(PurePosixPath(p).parts) and path.match(p) for p in patterns
        ), file
