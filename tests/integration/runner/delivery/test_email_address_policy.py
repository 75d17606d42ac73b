"""E-mail destinations obey the outbound address policy of the webhook senders: an SMTP host that
resolves to a metadata, link-local, private or loopback address is refused before any connection
(loopback and private only unless DIGESTD_DELIVERY_ALLOW_PRIVATE; metadata and link-local
always), the connection goes to the address checked while STARTTLS checks the certificate
against the host name of the settings, and the outbox records a refused delivery dead."""

from __future__ import annotations

import socket

import asyncpg
import pytest

from runner.delivery.contract import (
    Delivered,
    Destination,
    DestinationKind,
    Rejected,
    RetryLater,
)
from runner.delivery.email import EmailSender
from runner.delivery.outbox import load_senders
from runner.delivery.store import DestinationSpec
from runner.delivery.webhook import WebhookSender
from tests.support.deliveries import digest_content, one_pass_over
from tests.support.servers import resolving_to
from tests.support.smtp import (
    PASSWORD,
    USERNAME,
    MailSink,
    SelfSigned,
    smtp_server,
)

REFUSED = Rejected("the smtp host address is not allowed")
MAIL_HOST = "mail.team.example"


def _destination(host: str, port: int, *, tls: bool = True) -> Destination:
    settings = {
        "host": host,
        "port": str(port),
        "sender": "digests@digestd.example",
        "recipients": "ann@team.example",
        "starttls": "true" if tls else "false",
        "username": USERNAME if tls else "",
    }
    secrets = {"password": PASSWORD} if tls else {}
    return Destination(5, "inbox", DestinationKind.EMAIL, settings=settings, secrets=secrets)


@pytest.mark.parametrize("address", ["169.254.169.254", "10.0.0.1", "127.0.0.1", "fe80::1"])
async def test_an_smtp_host_resolving_to_a_forbidden_address_is_refused_unconnected(
    address: str, tls_server: MailSink, certificate: SelfSigned
) -> None:
    asked, resolve = resolving_to(address)
    sender = EmailSender(tls_context=certificate.client_context(), resolver=resolve)
    outcome = await sender.send(digest_content(), _destination(MAIL_HOST, tls_server.port))
    # A connection tried would end Delivered or RetryLater ("smtp connection failed"), never this.
    assert outcome == REFUSED
    assert asked == [MAIL_HOST]
    # For 127.0.0.1 the server is right there: it was not even greeted.
    assert tls_server.greetings == 0 and tls_server.received == []


async def test_metadata_and_link_local_are_refused_even_when_private_is_allowed(
    tls_server: MailSink, certificate: SelfSigned
) -> None:
    for address in ("169.254.169.254", "fe80::1", "fd00:ec2::254"):
        _, resolve = resolving_to(address)
        sender = EmailSender(
            tls_context=certificate.client_context(), allow_private=True, resolver=resolve
        )
        outcome = await sender.send(digest_content(), _destination(MAIL_HOST, tls_server.port))
        assert outcome == REFUSED, address
    # A literal address in the settings is checked the same way, with no lookup.
    literal = await EmailSender(allow_private=True).send(
        digest_content(), _destination("169.254.169.254", tls_server.port)
    )
    assert literal == REFUSED
    assert tls_server.greetings == 0


async def test_a_loopback_relay_is_reached_only_when_private_addresses_are_allowed() -> None:
    with smtp_server(None) as relay:
        destination = _destination(relay.host, relay.port, tls=False)
        refused = await load_senders(WebhookSender())[DestinationKind.EMAIL].send(
            digest_content(), destination
        )
        assert refused == REFUSED
        assert relay.greetings == 0
        allowed = load_senders(WebhookSender(), allow_private=True, timeout_seconds=5)
        sent = await allowed[DestinationKind.EMAIL].send(digest_content(), destination)
    assert sent == Delivered(status=250, parts=1)
    assert len(relay.received) == 1


async def test_starttls_checks_the_certificate_against_the_host_name_not_the_address(
    tls_server: MailSink, certificate: SelfSigned
) -> None:
    # The certificate names localhost and 127.0.0.1. Both hosts below resolve (by the stub) to
    # 127.0.0.1, where the server is: had the address been checked, both would be delivered.
    _, resolve = resolving_to("127.0.0.1")
    sender = EmailSender(
        tls_context=certificate.client_context(), allow_private=True, resolver=resolve
    )
    named = await sender.send(digest_content(), _destination("localhost", tls_server.port))
    assert named == Delivered(status=250, parts=1)
    other = await sender.send(digest_content(), _destination(MAIL_HOST, tls_server.port))
    assert other == Rejected("smtp server's tls certificate is not trusted")
    assert len(tls_server.received) == 1


async def test_an_smtp_host_that_does_not_resolve_is_tried_again_later(
    tls_server: MailSink,
) -> None:
    async def unknown(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    sender = EmailSender(allow_private=True, resolver=unknown)
    outcome = await sender.send(digest_content(), _destination(MAIL_HOST, tls_server.port))
    assert outcome == RetryLater("the smtp host does not resolve")
    assert tls_server.greetings == 0


async def test_the_outbox_marks_an_email_destination_on_a_forbidden_address_dead(
    db: asyncpg.Pool,
) -> None:
    settings = {
        "port": "587",
        "sender": "digests@digestd.example",
        "recipients": "ann@team.example",
    }
    specs = [
        DestinationSpec(name, "email", {**settings, "host": host}, {})
        for name, host in (("metadata", "169.254.169.254"), ("private", "10.0.0.1"))
    ]
    assert (
        await one_pass_over(db, specs) == [("dead", 1, "the smtp host address is not allowed")] * 2
    )
