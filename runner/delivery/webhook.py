"""The generic webhook sender: POST the delivery as JSON, signed, to the destination's URL.

What a receiver gets (docs/deliveries.md says how to verify it):
- the body: the content's JSON payload with `delivery_id` and `event`;
- `X-Digestd-Delivery`: the delivery id, the same on every attempt (drop a repeat by it);
- `X-Digestd-Timestamp`: unix seconds when this attempt was signed;
- `X-Digestd-Signature`: `sha256=` and the hex HMAC-SHA256, keyed by the destination's signing
  secret, of `"<timestamp>.<body>"`. A receiver recomputes it over the raw body, compares in
  constant time, and refuses a timestamp more than five minutes from its clock (a replay).

The URL is a secret and an outbound request the server makes, so it goes through the same
guard as a document fetch (runner/documents/fetch.py): every address its host resolves to is
checked, and the connection goes to the address checked. Loopback and private addresses are
refused unless DIGESTD_DELIVERY_ALLOW_PRIVATE is set; link-local and metadata addresses always.
Redirects are not followed. 2xx is delivered; 408, 429, 5xx and network errors are retried
(with the receiver's Retry-After, in seconds or as an HTTP date); any other status is a
permanent refusal. No reason recorded ever contains the URL or the receiver's body.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    Destination,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.webhook_post import SENDING_TO_A_SECRET_URL
from runner.documents.errors import FetchError
from runner.documents.fetch import FetchPolicy, Resolver, resolve_checked

SIGNATURE_HEADER = "X-Digestd-Signature"
TIMESTAMP_HEADER = "X-Digestd-Timestamp"
DELIVERY_HEADER = "X-Digestd-Delivery"
# The secrets a webhook destination holds.
URL_SECRET = "url"
SIGNING_SECRET = "signing_secret"
USER_AGENT = "digestd-webhook/1"
_RETRIED_STATUSES = frozenset({408, 429})


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The `X-Digestd-Signature` value of `body` sent at `timestamp`."""
    signed = timestamp.encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()


def verify_signature(
    secret: str,
    timestamp: str,
    body: bytes,
    header: str,
    *,
    now: float | None = None,
    tolerance_seconds: float = 300.0,
) -> bool:
    """What a receiver does: the signature matches and the timestamp is within the tolerance
    of its clock (an older one is a replay)."""
    try:
        sent = float(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance_seconds:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), header)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """A Retry-After header in seconds: delta-seconds or an HTTP date; None when absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def outcome_of(response: httpx.Response) -> SendOutcome:
    """What a receiver's answer means for the delivery."""
    status = response.status_code
    if 200 <= status < 300:
        return Delivered(status=status)
    if status in _RETRIED_STATUSES or status >= 500:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        return RetryLater(f"HTTP {status}", retry_after)
    return Rejected(f"HTTP {status}")


class WebhookSender:
    """Sends one attempt of a delivery to a webhook destination (`secrets["url"]`, signed with
    `secrets["signing_secret"]`)."""

    def __init__(
        self,
        *,
        allow_private: bool = False,
        timeout_seconds: float = 10.0,
        resolver: Resolver | None = None,
    ) -> None:
        self._policy = FetchPolicy(allow_loopback=allow_private, allow_private=allow_private)
        self._timeout = httpx.Timeout(timeout_seconds)
        self._resolver = resolver

    async def send(self, content: DeliveryContent, destination: Destination) -> SendOutcome:
        url_text = destination.secrets.get(URL_SECRET, "")
        secret = destination.secrets.get(SIGNING_SECRET, "")
        if not url_text or not secret:
            return Rejected("the destination has no URL or no signing secret")
        try:
            url = httpx.URL(url_text)
        except (httpx.InvalidURL, TypeError, ValueError):
            return Rejected("the destination URL cannot be parsed")
        if url.scheme not in ("http", "https") or not url.host:
            return Rejected("the destination URL is not http or https")
        port = url.port or (443 if url.scheme == "https" else 80)
        host = url.raw_host.decode("ascii")
        try:
            address = await resolve_checked(host, port, self._policy, self._resolver)
        except FetchError as refused:
            # The reason names the host, which is part of a secret: only the code is kept.
            if refused.code == "dns_failed":
                return RetryLater("the destination host does not resolve")
            return Rejected("the destination address is not allowed")
        body = json.dumps(dict(content.payload), separators=(",", ":"), default=str).encode()
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "Host": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
            DELIVERY_HEADER: content.delivery_id,
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: signature(secret, timestamp, body),
        }
        pinned = url.copy_with(host=str(address))
        extensions = {"sni_hostname": host} if url.scheme == "https" else {}
        hidden = SENDING_TO_A_SECRET_URL.set(True)
        try:
            # No proxy from the environment (it would connect to a name we did not check).
            async with httpx.AsyncClient(
                timeout=self._timeout, follow_redirects=False, trust_env=False
            ) as client:
                request = client.build_request(
                    "POST", pinned, content=body, headers=headers, extensions=extensions
                )
                response = await client.send(request)
        except httpx.TimeoutException:
            return RetryLater("the receiver timed out")
        except httpx.HTTPError as error:
            return RetryLater(f"network error: {type(error).__name__}")
        finally:
            SENDING_TO_A_SECRET_URL.reset(hidden)
        return outcome_of(response)
