"""One JSON POST to a chat webhook (Slack, Discord) with httpx: the URL checked first, the reply
read as status, headers and a bounded body, and a transport failure turned into RetryLater with
a reason of our own. The webhook URL is the secret: it never appears in a reason (httpx's error
texts can hold it, so they are never repeated)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from runner.delivery.contract import Rejected, RetryLater

DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_BODY_CHARS = 4_000  # an error body is read for its code, never kept whole


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: str


def checked_url(url: str | None, service: str) -> httpx.URL | Rejected:
    """The webhook URL when it is https (http only to a loopback host, for local receivers)."""
    if not url:
        return Rejected(f"{service} destination has no webhook url")
    try:
        parsed = httpx.URL(url.strip())
    except httpx.InvalidURL:
        return Rejected(f"{service} webhook url is not a valid url")
    if parsed.scheme == "https" and parsed.host:
        return parsed
    if parsed.scheme == "http" and _is_loopback(parsed.host):
        return parsed
    return Rejected(f"{service} webhook url must be https")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def post_json(
    client: httpx.AsyncClient, url: httpx.URL, payload: Mapping[str, Any], service: str
) -> Reply | RetryLater:
    """POST `payload`; a reply of any status, or RetryLater when none came."""
    try:
        response = await client.post(url, json=dict(payload), follow_redirects=False)
    except httpx.TimeoutException:
        return RetryLater(f"{service} webhook timed out")
    except httpx.HTTPError:
        return RetryLater(f"{service} webhook unreachable")
    return Reply(response.status_code, response.headers, response.text[:MAX_BODY_CHARS])


def new_client(timeout_seconds: float) -> httpx.AsyncClient:
    """A client of our own for one send (its cookies and connections end with it)."""
    return httpx.AsyncClient(timeout=timeout_seconds)
