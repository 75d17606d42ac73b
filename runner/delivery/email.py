"""Delivery by e-mail over SMTP (aiosmtplib): one multipart/alternative message per delivery,
the Markdown as its plain text and a safe HTML rendering (runner.delivery.markup.html_body, or the
content's own HTML when the delivery carries one) as its HTML part.

The destination's settings: `host`, `port` (587 with STARTTLS, else 25), `sender`, `recipients`
(comma-separated), `starttls` (`true` unless `false`), `username`; its secret: `password`. A
login is only sent over STARTTLS. The Message-ID is derived from the delivery id, so a message
sent again after a lost reply is recognisably the same one; the subject is the title on one line
(no CR or LF can reach a header). SMTP replies map to outcomes: 4xx retry later, 5xx refused;
a connection that fails or drops retries later.

The SMTP host obeys the outbound address policy of every delivery (runner.delivery.webhook_post's
address_policy): it is resolved once and every address checked (loopback and private only when
DIGESTD_DELIVERY_ALLOW_PRIVATE is set, link-local and metadata addresses never), the connection
is made to the address checked, so a second DNS answer cannot aim it elsewhere, and STARTTLS
verifies the certificate against the host name of the settings, not the address."""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, parseaddr

import aiosmtplib

from runner.core.markdown_text import single_line
from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    Destination,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.links import LINK_TEXT
from runner.delivery.markup import html_body, safe_link
from runner.delivery.webhook_post import address_policy
from runner.documents.errors import FetchError
from runner.documents.fetch import FetchPolicy, Resolver, resolve_checked

DEFAULT_TIMEOUT_SECONDS = 30.0
SUBJECT_CHARS = 200
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
ADDRESS_NOT_ALLOWED = "the smtp host address is not allowed"


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    sender: str
    recipients: tuple[str, ...]
    starttls: bool
    username: str | None
    password: str | None


def _address(value: str) -> str | None:
    """A bare `user@domain` address, or None (names, CR/LF and anything odd refused)."""
    _, address = parseaddr(value.strip())
    if not address or address != value.strip() or "@" not in address:
        return None
    if any(char.isspace() or not char.isprintable() for char in address):
        return None
    return address


def smtp_settings(destination: Destination) -> SmtpSettings | Rejected:
    settings, secrets = destination.settings, destination.secrets
    host = settings.get("host", "").strip()
    if not host:
        return Rejected("email destination has no smtp host")
    starttls = settings.get("starttls", "true").strip().lower() not in ("false", "0", "no")
    try:
        port = int(settings.get("port") or (587 if starttls else 25))
    except ValueError:
        return Rejected("email destination's smtp port is not a number")
    sender = _address(settings.get("sender", ""))
    if sender is None:
        return Rejected("email destination's sender is not an address")
    recipients = [part for part in settings.get("recipients", "").split(",") if part.strip()]
    checked = [_address(part) for part in recipients]
    if not checked or any(address is None for address in checked):
        return Rejected("email destination's recipients are not addresses")
    username = settings.get("username", "").strip() or None
    if username and not starttls:
        return Rejected("email destination logs in without starttls")
    return SmtpSettings(
        host=host,
        port=port,
        sender=sender,
        recipients=tuple(address for address in checked if address),
        starttls=starttls,
        username=username,
        password=secrets.get("password") if username else None,
    )


def message_id(delivery_id: str, sender: str) -> str:
    domain = sender.rsplit("@", 1)[1] if "@" in sender else "digestd.invalid"
    return f"<digestd.{_ID_UNSAFE.sub('-', delivery_id).strip('-') or 'delivery'}@{domain}>"


def subject_of(title: str) -> str:
    """The title on one line, control characters (CR and LF among them) dropped."""
    line = single_line(title) or "digestd"
    return line if len(line) <= SUBJECT_CHARS else line[: SUBJECT_CHARS - 1] + "…"


def build_message(content: DeliveryContent, settings: SmtpSettings) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = subject_of(content.title)
    message["From"] = settings.sender
    message["To"] = ", ".join(settings.recipients)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = message_id(content.delivery_id, settings.sender)
    label = LINK_TEXT[content.event]
    text = content.markdown or subject_of(content.title)
    if target := safe_link(content.link):
        text = f"{text.rstrip()}\n\n{label}: {target}\n"
    message.set_content(text)
    rendered = content.html or html_body(
        content.markdown, subject_of(content.title), content.link, label
    )
    message.add_alternative(rendered, subtype="html")
    return message


def _reply_outcome(code: int, what: str) -> SendOutcome:
    if 400 <= code < 500:
        return RetryLater(f"smtp {what} deferred ({code})")
    return Rejected(f"smtp {what} refused ({code})")


async def checked_address(
    host: str, port: int, policy: FetchPolicy, resolver: Resolver | None = None
) -> str | Rejected | RetryLater:
    """The address to connect to for the SMTP host: Rejected when an address it resolves to is
    refused by the policy (no connection is made), RetryLater when it does not resolve now."""
    try:
        address = await resolve_checked(host, port, policy, resolver)
    except FetchError as refused:
        # The host is a setting, not a secret, but the reasons stay short and fixed.
        if refused.code == "dns_failed":
            return RetryLater("the smtp host does not resolve")
        return Rejected(ADDRESS_NOT_ALLOWED)
    return str(address)


class EmailSender:
    """Sends a delivery as one e-mail to the destination's recipients."""

    def __init__(
        self,
        *,
        tls_context: ssl.SSLContext | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        allow_private: bool = False,
        resolver: Resolver | None = None,
    ) -> None:
        # None: the system's trusted certificates, host names checked (aiosmtplib's default).
        self._tls_context = tls_context
        self._timeout_seconds = timeout_seconds
        # Loopback and private SMTP hosts only when DIGESTD_DELIVERY_ALLOW_PRIVATE is set.
        self._policy = address_policy(allow_private)
        self._resolver = resolver

    async def send(self, content: DeliveryContent, destination: Destination) -> SendOutcome:
        settings = smtp_settings(destination)
        if isinstance(settings, Rejected):
            return settings
        address = await checked_address(settings.host, settings.port, self._policy, self._resolver)
        if not isinstance(address, str):
            return address
        message = build_message(content, settings)
        # Connected to the checked address; STARTTLS is asked for by hand so that its server name
        # (SNI and the certificate's name check) is the host of the settings. aiosmtplib.send
        # would use the address for both.
        client = aiosmtplib.SMTP(
            hostname=address,
            port=settings.port,
            start_tls=False,
            tls_context=self._tls_context if settings.starttls else None,
            timeout=self._timeout_seconds,
        )
        try:
            async with client:
                if settings.starttls:
                    await client.starttls(server_hostname=settings.host)
                if settings.username:
                    await client.login(settings.username, settings.password or "")
                await client.send_message(
                    message, sender=settings.sender, recipients=list(settings.recipients)
                )
        except aiosmtplib.SMTPRecipientsRefused as refused:
            codes = [recipient.code for recipient in refused.recipients]
            if any(400 <= code < 500 for code in codes):
                return RetryLater(f"smtp recipients deferred ({min(codes)})")
            return Rejected(f"smtp recipients refused ({min(codes, default=550)})")
        except aiosmtplib.SMTPAuthenticationError as failed:
            return _reply_outcome(failed.code, "login")
        except aiosmtplib.SMTPSenderRefused as refused:
            return _reply_outcome(refused.code, "sender")
        except aiosmtplib.SMTPResponseException as failed:
            return _reply_outcome(failed.code, "server")
        except ssl.SSLCertVerificationError:
            return Rejected("smtp server's tls certificate is not trusted")
        except (
            aiosmtplib.SMTPConnectError,
            aiosmtplib.SMTPServerDisconnected,
            aiosmtplib.SMTPTimeoutError,
            OSError,
        ):
            # Connection refused, reset, timed out or dropped: the server may be back later.
            return RetryLater("smtp connection failed")
        except aiosmtplib.SMTPException:
            # What is left is a server that lacks what the destination needs (STARTTLS, AUTH,
            # SMTPUTF8): a setting to change, not a moment to wait for.
            return Rejected("smtp server lacks starttls, login or utf-8 addresses")
        return Delivered(status=250, parts=1)
