"""CORS for dashboards, over HTTP against the real app with tokens on: DIGESTD_CORS_ORIGINS lists
the exact origins whose pages may call the API; a preflight (which a browser sends without a
token) is answered before authentication; other origins get no CORS header; unset, none at all."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from pydantic import SecretStr, ValidationError

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.servers import running_server

DASHBOARD = "http://127.0.0.1:8088"
OTHER = "http://localhost:8088"
READER = "Bearer reader-token-1"
QUERY = {"query": "{ channels { nodes { id } } }"}


def preflight(origin: str) -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }


@pytest.fixture
async def api(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(
        update={
            "digestd_api_tokens": SecretStr("reader:reader-token-1,writer:writer-token-1"),
            "digestd_cors_origins": f"{DASHBOARD}, https://dash.example",
        }
    )
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield http


async def test_a_preflight_from_an_allowed_origin_is_answered_without_a_token(
    api: httpx.AsyncClient,
) -> None:
    response = await api.options("/graphql", headers=preflight(DASHBOARD))
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == DASHBOARD
    assert {"authorization", "content-type"} <= set(
        response.headers["access-control-allow-headers"].lower().split(", ")
    )
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "access-control-allow-credentials" not in response.headers
    assert "origin" in response.headers["vary"].lower()


async def test_an_allowed_origin_reads_data_and_refusals(api: httpx.AsyncClient) -> None:
    allowed = await api.post(
        "/graphql", json=QUERY, headers={"origin": DASHBOARD, "authorization": READER}
    )
    assert allowed.json() == {"data": {"channels": {"nodes": []}}}
    assert allowed.headers["access-control-allow-origin"] == DASHBOARD
    assert "x-request-id" in allowed.headers["access-control-expose-headers"].lower()
    # Without a token the API still refuses, and the dashboard can read why.
    refused = await api.post("/graphql", json=QUERY, headers={"origin": DASHBOARD})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == DASHBOARD


async def test_an_origin_not_listed_gets_no_cors_header(api: httpx.AsyncClient) -> None:
    response = await api.options("/graphql", headers=preflight(OTHER))
    assert response.status_code == 400
    assert "access-control-allow-origin" not in response.headers
    actual = await api.post(
        "/graphql", json=QUERY, headers={"origin": OTHER, "authorization": READER}
    )
    assert "access-control-allow-origin" not in actual.headers


async def test_unset_means_no_cors(db: asyncpg.Pool, settings: Settings) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post("/graphql", json=QUERY, headers={"origin": DASHBOARD})
        assert response.status_code == 200
        assert not [name for name in response.headers if name.startswith("access-control-")]
        assert (await http.options("/graphql", headers=preflight(DASHBOARD))).status_code == 405


@pytest.mark.parametrize(
    "spec", ["*", "http://127.0.0.1:8088/", "dash.example", "https://*.example"]
)
def test_origins_must_be_exact(spec: str) -> None:
    with pytest.raises(ValidationError, match="is not an origin"):
        Settings(digestd_cors_origins=spec)
    assert Settings(digestd_cors_origins=" https://a.example ,http://127.0.0.1:9").cors_origins == [
        "https://a.example",
        "http://127.0.0.1:9",
    ]
