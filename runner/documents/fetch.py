"""The one hardened path by which digestd downloads a document from a URL.

Server-side request forgery is the threat: a user-supplied URL must not reach the machine's own
services, the private network or a cloud metadata endpoint. So:
- only `http` and `https`;
- the host name is resolved first and EVERY address is checked (loopback, private, link-local,
  multicast, reserved, unspecified, shared/CGNAT, metadata, and IPv6 forms that embed an IPv4
  address: mapped `::ffff:a.b.c.d`, 6to4, NAT64); one bad address refuses the whole name;
- the connection goes to the address that was checked (a second DNS answer cannot rebind it),
  with the original `Host` header and, for https, the original name as SNI and for certificate
  verification;
- redirects are followed by hand, at most 5, each target checked like the first URL;
- the body is streamed and cut at 10 MB; connect, read and total timeouts apply;
- the content type is checked against the magic bytes (`sniff.classify_content`).
Loopback and private addresses can be allowed explicitly (tests, trusted deployments); link-local
and metadata addresses never are. Errors are `FetchError`s whose reason never contains the body.
Proxies from the environment are ignored: a proxy would connect to a name we did not check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from runner.documents.errors import ExtractionError, FetchError
from runner.documents.sniff import DocumentKind, classify_content, media_type

Resolver = Callable[[str, int], Awaitable[list[str]]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")  # Linux routes 0.x.x.x to the local host
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class FetchPolicy:
    allow_loopback: bool = False
    allow_private: bool = False
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 5
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 30.0
    user_agent: str = "digestd/0.1 (document digest)"
    ca_bundle: str | None = None  # CA file for https (private CAs, tests); None = httpx default


@dataclass(frozen=True)
class FetchedDocument:
    url: str
    final_url: str
    content_type: str  # the declared media type, lower case, without parameters
    charset: str | None
    kind: DocumentKind
    body: bytes


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def blocked_reason(address: IPAddress, policy: FetchPolicy) -> str | None:
    """Why `address` may not be contacted under `policy`, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = blocked_reason(embedded, policy)
            return f"{reason} (embedded in {address})" if reason else None
    if address in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified or (address.version == 4 and address in _THIS_NETWORK):
        return "an unspecified address"
    if address.is_loopback:
        return None if policy.allow_loopback else "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private or (address.version == 4 and address in _SHARED_ADDRESS_SPACE):
        return None if policy.allow_private else "a private-network address"
    if not address.is_global:
        return "a non-global address"
    return None


async def _system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def resolve_checked(
    host: str, port: int, policy: FetchPolicy, resolver: Resolver | None = None
) -> IPAddress:
    """The address to connect to for `host`, after checking every address it resolves to."""
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            answers = await (resolver or _system_resolver)(host, port)
        except (OSError, UnicodeError) as error:
            raise FetchError("dns_failed", f"cannot resolve {host!r} ({error})") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(a.split("%", 1)[0]) for a in answers))
        if not addresses:
            raise FetchError("dns_failed", f"{host!r} resolves to no address")
    for address in addresses:
        reason = blocked_reason(address, policy)
        if reason:
            raise FetchError("blocked_address", f"{host!r} resolves to {reason}: {address}")
    return addresses[0]


def _checked_url(url: str | httpx.URL) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise FetchError("bad_url", "the URL cannot be parsed") from None
    if parsed.scheme not in ("http", "https"):
        raise FetchError(
            "bad_scheme", f"only http and https URLs are fetched, not {parsed.scheme!r}"
        )
    if not parsed.host:
        raise FetchError("bad_url", "the URL has no host")
    return parsed


def _ascii_host(url: httpx.URL) -> str:
    """The host as sent on the wire: IDNA (punycode) for international names."""
    return url.raw_host.decode("ascii")


def _host_header(url: httpx.URL) -> str:
    host = _ascii_host(url)
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{url.port}" if url.port is not None else host


async def _read_body(response: httpx.Response, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise FetchError("too_large", f"the document is {declared} bytes; the limit is {max_bytes}")
    body = bytearray()
    async for piece in response.aiter_bytes():
        body += piece
        if len(body) > max_bytes:
            raise FetchError("too_large", f"the download exceeded {max_bytes} bytes")
    return bytes(body)


async def _fetch(
    client: httpx.AsyncClient, url: str, policy: FetchPolicy, resolver: Resolver | None
) -> FetchedDocument:
    current = _checked_url(url)
    for _hop in range(policy.max_redirects + 1):
        port = current.port or (443 if current.scheme == "https" else 80)
        address = await resolve_checked(_ascii_host(current), port, policy, resolver)
        pinned = current.copy_with(host=str(address))
        extensions = {"sni_hostname": _ascii_host(current)} if current.scheme == "https" else {}
        request = client.build_request(
            "GET",
            pinned,
            headers={"Host": _host_header(current), "User-Agent": policy.user_agent},
            extensions=extensions,
        )
        response = await client.send(request, stream=True)
        try:
            if response.status_code in _REDIRECT_STATUSES and "location" in response.headers:
                current = _checked_url(current.join(response.headers["location"]))
                continue
            if not 200 <= response.status_code < 300:
                raise FetchError("http_status", f"the server answered HTTP {response.status_code}")
            body = await _read_body(response, policy.max_bytes)
            declared = response.headers.get("content-type")
        finally:
            await response.aclose()
        mime, charset = media_type(declared)
        try:
            kind = classify_content(body, declared)
        except ExtractionError as error:
            raise FetchError(error.code, error.reason) from None
        return FetchedDocument(
            url=url,
            final_url=str(current),
            content_type=mime,
            charset=charset,
            kind=kind,
            body=body,
        )
    raise FetchError("too_many_redirects", f"more than {policy.max_redirects} redirects")


def _caused_by_tls(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _tls(policy: FetchPolicy) -> ssl.SSLContext | bool:
    """Certificates are always verified, against the URL's host name (sent as SNI)."""
    return ssl.create_default_context(cafile=policy.ca_bundle) if policy.ca_bundle else True


async def fetch_document(
    url: str, policy: FetchPolicy | None = None, *, resolver: Resolver | None = None
) -> FetchedDocument:
    """Download `url` under `policy` (see the module docstring). `resolver` replaces DNS (tests
    use it to map names to addresses without touching the network)."""
    policy = policy or FetchPolicy()
    timeout = httpx.Timeout(
        connect=policy.connect_timeout,
        read=policy.read_timeout,
        write=policy.read_timeout,
        pool=policy.connect_timeout,
    )
    try:
        async with asyncio.timeout(policy.total_timeout):
            async with httpx.AsyncClient(
                timeout=timeout, follow_redirects=False, trust_env=False, verify=_tls(policy)
            ) as client:
                return await _fetch(client, url, policy, resolver)
    except TimeoutError:
        raise FetchError(
            "timeout", f"the download took longer than {policy.total_timeout:g} s"
        ) from None
    except httpx.TimeoutException as error:
        raise FetchError("timeout", f"{type(error).__name__}: the server was too slow") from None
    except httpx.ConnectError as error:
        if _caused_by_tls(error):
            raise FetchError("tls_error", "the server's TLS certificate was refused") from None
        raise FetchError("connect_failed", "the server could not be reached") from None
    except httpx.HTTPError as error:
        raise FetchError("network_error", f"{type(error).__name__} while downloading") from None
