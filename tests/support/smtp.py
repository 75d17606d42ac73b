"""A real SMTP server on loopback (aiosmtpd, in its own thread) that records every message it
took, with STARTTLS on a self-signed certificate made for the test (cryptography) and LOGIN/PLAIN
authentication, or plain SMTP; replies a test queues (`451`, `550`) answer the next RCPT or DATA."""

from __future__ import annotations

import contextlib
import ipaddress
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.servers import free_port

USERNAME = "digest-bot"
PASSWORD = "smtp-secret-password"


@dataclass
class ReceivedMail:
    sender: str
    recipients: list[str]
    message: EmailMessage
    over_tls: bool
    login: str | None


@dataclass
class MailSink:
    """The aiosmtpd handler: records messages, answers queued replies first."""

    received: list[ReceivedMail] = field(default_factory=list)
    rcpt_replies: list[str] = field(default_factory=list)
    data_replies: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 0
    # EHLOs answered: every client that connects says EHLO first, so 0 means nobody connected.
    greetings: int = 0

    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        self.greetings += 1
        session.host_name = hostname  # what aiosmtpd does itself when no hook answers EHLO
        return responses

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        if self.rcpt_replies:
            return self.rcpt_replies.pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        if self.data_replies:
            return self.data_replies.pop(0)
        content = envelope.original_content or b""
        parsed = message_from_bytes(content, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        login = session.auth_data.decode() if isinstance(session.auth_data, bytes) else None
        self.received.append(
            ReceivedMail(
                str(envelope.mail_from),
                list(envelope.rcpt_tos),
                parsed,
                session.ssl is not None,
                login,
            )
        )
        return "250 Message accepted for delivery"


def _authenticate(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
        USERNAME.encode(),
        PASSWORD.encode(),
    )
    # handled=False: aiosmtpd answers the failure itself (535), as a real server does.
    return AuthResult(success=ok, handled=False, auth_data=data.login if ok else None)


@dataclass(frozen=True)
class SelfSigned:
    cert_file: Path
    key_file: Path
    pem: str

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def client_context(self) -> ssl.SSLContext:
        """Trusts this certificate only, host name checked as in production."""
        return ssl.create_default_context(cadata=self.pem)


def self_signed_certificate(directory: Path) -> SelfSigned:
    """A certificate for 127.0.0.1 and localhost, made now, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "digestd test smtp")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    cert_file, key_file = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_file.write_text(pem, encoding="utf-8")
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return SelfSigned(cert_file, key_file, pem)


@contextlib.contextmanager
def smtp_server(certificate: SelfSigned | None, port: int | None = None) -> Iterator[MailSink]:
    """An SMTP server on a free loopback port: with a certificate it offers STARTTLS, requires it
    before anything else and offers AUTH only after it; without one it is plain SMTP (AUTH
    offered, as some relays on a private network do). `port`: one chosen beforehand, for a server
    that starts after a sender has found nothing there."""
    sink = MailSink()
    sink.port = port or free_port()
    tls: dict[str, Any] = (
        {"tls_context": certificate.server_context(), "require_starttls": True}
        if certificate
        else {"auth_require_tls": False}
    )
    controller = Controller(
        sink,
        hostname=sink.host,
        port=sink.port,
        authenticator=_authenticate,
        server_hostname="localhost",
        **tls,
    )
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()
