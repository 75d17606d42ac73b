"""Delivery by e-mail over SMTP (aiosmtplib): one multipart/alternative message per delivery,
the Markdown as its plain text and a safe HTML rendering (runner.delivery.markup.html_body, or the
content's own HTML when the delivery carries one) as its HTML part.

The destination's settings: `host`, `port` (587 with STARTTLS, else 25), `sender`, `recipients`
(comma-separated), `starttls` (`true` unless `false`), `username`; its secret: `password`. A
login is only sent over STARTTLS. The Message-ID is derived from the delivery id, so a message
sent again after a lost reply is recognisably the same one; the subject is the title on one line
(no CR or LF can reach a header). SMTP replies map to outcomes: 4xx retry later, 5xx refused;
a connection that fails or drops retries later."""

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
from runner.delivery.markup import html_body

DEFAULT_TIMEOUT_SECONDS = 30.0
SUBJECT_CHARS = 200
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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
    message.set_content(content.markdown or subject_of(content.title))
    rendered = content.html or html_body(content.markdown, subject_of(content.title), content.link)
    message.add_alternative(rendered, subtype="html")
    return message


def _reply_outcome(code: int, what: str) -> SendOutcome:
    if 400 <= code < 500:
        return RetryLater(f"smtp {what} deferred ({code})")
    return Rejected(f"smtp {what} refused ({code})")


class EmailSender:
    """Sends a delivery as one e-mail to the destination's recipients."""

    def __init__(
        self,
        *,
        tls_context: ssl.SSLContext | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        # None: the system's trusted certificates, host names checked (aiosmtplib's default).
        self._tls_context = tls_context
        self._timeout_seconds = timeout_seconds

    async def send(self, content: DeliveryContent, destination: Destination) -> SendOutcome:
        settings = smtp_settings(destination)
        if isinstance(settings, Rejected):
            return settings
        message = build_message(content, settings)
        try:
            await aiosmtplib.send(
                message,
                sender=settings.sender,
                recipients=list(settings.recipients),
                hostname=settings.host,
                port=settings.port,
                username=settings.username,
                password=settings.password,
                start_tls=settings.starttls,
                tls_context=self._tls_context if settings.starttls else None,
                timeout=self._timeout_seconds,
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
