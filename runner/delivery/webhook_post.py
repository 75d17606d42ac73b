"""One JSON POST to a chat webhook (Slack, Discord) with httpx: the URL checked first, its host
resolved and every address checked by the outbound address policy the generic webhook uses
(runner.documents.fetch.resolve_checked: loopback and private addresses only when
DIGESTD_DELIVERY_ALLOW_PRIVATE is set, link-local and metadata addresses never), the connection
made to the address checked, the reply read as status, headers and a bounded body, and a
transport failure turned into RetryLater with a reason of our own. The webhook URL is the secret:
it never appears in a reason (httpx's error texts can hold it, so they are never repeated)."""

from __future__ import annotations

import contextvars
import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from runner.delivery.contract import Rejected, RetryLater
from runner.documents.errors import FetchError
from runner.documents.fetch import FetchPolicy, Resolver, resolve_checked

DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_BODY_CHARS = 4_000  # an error body is read for its code, never kept whole
ADDRESS_NOT_ALLOWED = "webhook address is not allowed"

# httpx logs every request's full URL at INFO; a destination's URL is a secret, so its records
# are dropped while this task sends to one (other requests, and other tasks, log as before).
# Every delivery sender that posts to a destination's URL sets it around its requests.
SENDING_TO_A_SECRET_URL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "sending_to_a_secret_url", default=False
)


class _SecretUrlFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not SENDING_TO_A_SECRET_URL.get()


logging.getLogger("httpx").addFilter(_SecretUrlFilter())


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: str


@dataclass(frozen=True)
class Target:
    """Where a post goes: the URL with its host replaced by the address checked (so a second DNS
    answer cannot send it elsewhere), and the Host header and TLS server name of the original."""

    url: httpx.URL
    host_header: str
    extensions: Mapping[str, Any] = field(default_factory=dict)


def address_policy(allow_private: bool) -> FetchPolicy:
    """The outbound policy of every delivery: the same one the generic webhook sender uses."""
    return FetchPolicy(allow_loopback=allow_private, allow_private=allow_private)


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


async def checked_target(
    url: str | None, service: str, policy: FetchPolicy, resolver: Resolver | None = None
) -> Target | Rejected | RetryLater:
    """The checked URL pinned to an allowed address; Rejected for a URL or an address refused
    (no request is made), RetryLater when the host does not resolve now."""
    parsed = checked_url(url, service)
    if isinstance(parsed, Rejected):
        return parsed
    host = parsed.raw_host.decode("ascii")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        address = await resolve_checked(host, port, policy, resolver)
    except FetchError as refused:
        # The reason names the host, which is part of a secret: only the code is kept.
        if refused.code == "dns_failed":
            return RetryLater(f"{service} webhook host does not resolve")
        return Rejected(f"{service} {ADDRESS_NOT_ALLOWED}")
    extensions = {"sni_hostname": host} if parsed.scheme == "https" else {}
    return Target(parsed.copy_with(host=str(address)), parsed.netloc.decode("ascii"), extensions)


async def post_json(
    client: httpx.AsyncClient, target: Target, payload: Mapping[str, Any], service: str
) -> Reply | RetryLater:
    """POST `payload`; a reply of any status, or RetryLater when none came."""
    hidden = SENDING_TO_A_SECRET_URL.set(True)
    try:
        request = client.build_request(
            "POST",
            target.url,
            json=dict(payload),
            headers={"Host": target.host_header},
            extensions=dict(target.extensions),
        )
        response = await client.send(request, follow_redirects=False)
    except httpx.TimeoutException:
        return RetryLater(f"{service} webhook timed out")
    except httpx.HTTPError:
        return RetryLater(f"{service} webhook unreachable")
    finally:
        SENDING_TO_A_SECRET_URL.reset(hidden)
    return Reply(response.status_code, response.headers, response.text[:MAX_BODY_CHARS])


def new_client(timeout_seconds: float) -> httpx.AsyncClient:
    """A client of our own for one send (its cookies and connections end with it); no proxy from
    the environment, which would connect to a name we did not check."""
    return httpx.AsyncClient(timeout=timeout_seconds, trust_env=False)
