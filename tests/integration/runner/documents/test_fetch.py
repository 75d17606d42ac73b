"""The hardened fetcher: SSRF refusals before any connection, redirects re-checked, size and time
limits, content checks. Positive cases use a server on 127.0.0.1 with loopback explicitly
allowed; nothing here contacts a non-loopback address (blocked ones are refused before connect,
and host names are resolved by a static table)."""

from __future__ import annotations

import ipaddress
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from runner.documents.errors import FetchError
from runner.documents.fetch import FetchPolicy, blocked_reason, fetch_document
from runner.documents.ingest import ingest_url
from tests.support.documents import Route, local_server, static_resolver

LOOPBACK_OK = FetchPolicy(allow_loopback=True, total_timeout=5.0)
HTML = (
    b"<!doctype html><html><head><title>T</title></head><body><article><h1>Title</h1>"
    + (
        b"<p>Paragraph one about rate limiting in depth, with enough words to count.</p>"
        b"<p>Paragraph two about retries and backoff, also with enough words to count.</p>"
    )
    + b"</article></body></html>"
)
PDF_LIKE = b"%PDF-1.4\n%fake body for a content check only\n"


def _routes() -> dict[str, Route]:
    return {
        "/page": Route(headers={"Content-Type": "text/html; charset=utf-8"}, body=HTML),
        "/text": Route(headers={"Content-Type": "text/plain"}, body=b"plain words\n\nsecond"),
        "/redirect": Route(status=302, headers={"Location": "/page"}),
        "/to-private": Route(status=302, headers={"Location": "http://10.0.0.7/secret"}),
        "/to-metadata": Route(
            status=301, headers={"Location": "http://169.254.169.254/latest/meta-data/"}
        ),
        "/to-file": Route(status=302, headers={"Location": "file:///etc/passwd"}),
        "/loop": Route(status=302, headers={"Location": "/loop"}),
        "/big": Route(headers={"Content-Type": "text/plain"}, body=b"x" * 5000),
        "/big-streamed": Route(headers={"Content-Type": "text/plain"}, chunks=[b"y" * 1000] * 8),
        "/slow": Route(headers={"Content-Type": "text/plain"}, chunks=[b"z"] * 50, delay=0.1),
        "/fake-pdf": Route(headers={"Content-Type": "application/pdf"}, body=b"<html>not a pdf"),
        "/pdf-as-octets": Route(
            headers={"Content-Type": "application/octet-stream"}, body=PDF_LIKE
        ),
        "/image": Route(headers={"Content-Type": "image/png"}, body=b"\x89PNG\r\n\x1a\n\x00\x00"),
        "/missing": Route(status=404, body=b"secret body text"),
    }


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost.test/",  # resolved by the static table to 127.0.0.1
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://2130706433/",  # 127.0.0.1 written as one decimal number
    ],
)
async def test_private_and_loopback_addresses_are_refused_before_connecting(url: str) -> None:
    resolver = static_resolver({"localhost.test": ["127.0.0.1"], "2130706433": ["127.0.0.1"]})
    with pytest.raises(FetchError) as caught:
        await fetch_document(url, FetchPolicy(), resolver=resolver)
    assert caught.value.code == "blocked_address"


async def test_one_bad_address_among_several_refuses_the_name() -> None:
    resolver = static_resolver({"mixed.test": ["93.184.216.34", "127.0.0.1"]})
    with pytest.raises(FetchError) as caught:
        await fetch_document("http://mixed.test/", FetchPolicy(), resolver=resolver)
    assert caught.value.code == "blocked_address" and "loopback" in caught.value.reason


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/a.pdf", "gopher://x/"])
async def test_only_http_and_https(url: str) -> None:
    with pytest.raises(FetchError) as caught:
        await fetch_document(url, LOOPBACK_OK)
    assert caught.value.code == "bad_scheme"


def test_metadata_and_link_local_stay_blocked_even_when_private_is_allowed() -> None:
    permissive = FetchPolicy(allow_loopback=True, allow_private=True)
    for address in ("169.254.169.254", "fd00:ec2::254", "fe80::1", "::ffff:169.254.169.254"):
        assert blocked_reason(ipaddress.ip_address(address), permissive) is not None
    assert blocked_reason(ipaddress.ip_address("10.0.0.1"), permissive) is None
    assert blocked_reason(ipaddress.ip_address("8.8.8.8"), FetchPolicy()) is None


async def test_loopback_is_refused_without_the_explicit_setting() -> None:
    with local_server(_routes()) as server:
        with pytest.raises(FetchError) as caught:
            await fetch_document(server.url("/page"), FetchPolicy())
        assert caught.value.code == "blocked_address"
        assert server.seen_hosts == []  # refused before any connection


async def test_fetches_html_with_loopback_allowed() -> None:
    with local_server(_routes()) as server:
        fetched = await fetch_document(server.url("/page"), LOOPBACK_OK)
    assert fetched.kind == "html" and fetched.charset == "utf-8" and fetched.body == HTML


async def test_connects_to_the_checked_address_with_the_original_host_header() -> None:
    with local_server(_routes()) as server:
        resolver = static_resolver({"docs.test": ["127.0.0.1"]})
        fetched = await fetch_document(
            server.url("/text", "docs.test"), LOOPBACK_OK, resolver=resolver
        )
        assert server.seen_hosts == [f"docs.test:{server.port}"]
    assert fetched.kind == "text" and fetched.final_url.startswith("http://docs.test:")


async def test_redirects_are_followed_and_rechecked() -> None:
    with local_server(_routes()) as server:
        fetched = await fetch_document(server.url("/redirect"), LOOPBACK_OK)
        assert fetched.final_url.endswith("/page")
        for path, code in [
            ("/to-private", "blocked_address"),
            ("/to-metadata", "blocked_address"),
            ("/to-file", "bad_scheme"),
            ("/loop", "too_many_redirects"),
        ]:
            with pytest.raises(FetchError) as caught:
                await fetch_document(server.url(path), LOOPBACK_OK)
            assert caught.value.code == code, path
        assert server.seen_hosts.count(f"127.0.0.1:{server.port}") == 2 + 3 + 6


async def test_size_cap_by_header_and_while_streaming() -> None:
    small = FetchPolicy(allow_loopback=True, max_bytes=4000, total_timeout=5.0)
    with local_server(_routes()) as server:
        for path in ("/big", "/big-streamed"):
            with pytest.raises(FetchError) as caught:
                await fetch_document(server.url(path), small)
            assert caught.value.code == "too_large", path


async def test_slow_download_hits_the_total_timeout() -> None:
    hurried = FetchPolicy(allow_loopback=True, total_timeout=0.5, read_timeout=5.0)
    with local_server(_routes()) as server, pytest.raises(FetchError) as caught:
        await fetch_document(server.url("/slow"), hurried)
    assert caught.value.code == "timeout"


async def test_content_type_and_magic_bytes() -> None:
    with local_server(_routes()) as server:
        with pytest.raises(FetchError) as caught:
            await fetch_document(server.url("/fake-pdf"), LOOPBACK_OK)
        assert caught.value.code == "bad_magic"
        fetched = await fetch_document(server.url("/pdf-as-octets"), LOOPBACK_OK)
        assert fetched.kind == "pdf"
        with pytest.raises(FetchError) as caught:
            await fetch_document(server.url("/image"), LOOPBACK_OK)
        assert caught.value.code == "unsupported_content_type"


async def test_http_errors_never_carry_the_body() -> None:
    with local_server(_routes()) as server, pytest.raises(FetchError) as caught:
        await fetch_document(server.url("/missing"), LOOPBACK_OK)
    assert caught.value.code == "http_status" and "404" in caught.value.reason
    assert "secret" not in str(caught.value)


async def test_ingest_url_gives_a_canonical_document() -> None:
    with local_server(_routes()) as server:
        document = await ingest_url(server.url("/page"), policy=LOOPBACK_OK)
    assert document.content_type == "text/html"
    assert document.canonical_text.split("\n\n")[0] == "Title"
    assert document.source_url is not None and document.source_url.endswith("/page")


def _make_tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for `docs.test` signed by it (openssl CLI)."""
    ca_key, ca_cert = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "leaf.key", directory / "leaf.csr", directory / "leaf.pem"
    extensions = directory / "ext.cnf"
    extensions.write_text("subjectAltName=DNS:docs.test\n")

    def run(*args: str | Path) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        ca_key,
        "-out",
        ca_cert,
        "-days",
        "2",
        "-subj",
        "/CN=digestd test CA",
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-out",
        csr,
        "-subj",
        "/CN=docs.test",
    )
    run(
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca_cert,
        "-CAkey",
        ca_key,
        "-CAcreateserial",
        "-out",
        cert,
        "-days",
        "2",
        "-extfile",
        extensions,
    )
    return ca_cert, cert, key


async def test_https_connects_to_the_checked_address_with_sni_and_verifies_the_name(
    tmp_path: Path,
) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    ca_cert, cert, key = _make_tls_files(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with local_server(_routes(), tls=context) as server:
        resolver = static_resolver({"docs.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
        policy = FetchPolicy(allow_loopback=True, total_timeout=5.0, ca_bundle=str(ca_cert))
        fetched = await fetch_document(
            f"https://docs.test:{server.port}/page", policy, resolver=resolver
        )
        assert fetched.kind == "html" and server.seen_hosts == [f"docs.test:{server.port}"]
        # The certificate is checked against the URL's name, not the address connected to.
        with pytest.raises(FetchError) as caught:
            await fetch_document(
                f"https://other.test:{server.port}/page", policy, resolver=resolver
            )
        assert caught.value.code == "tls_error"


async def test_international_host_names_are_sent_as_punycode() -> None:
    with local_server(_routes()) as server:
        resolver = static_resolver({"xn--bcher-kva.test": ["127.0.0.1"]})
        url = f"http://bücher.test:{server.port}/text"
        fetched = await fetch_document(url, LOOPBACK_OK, resolver=resolver)
        assert server.seen_hosts == [f"xn--bcher-kva.test:{server.port}"]
    assert fetched.kind == "text"
