"""EmailSender against a real SMTP server on loopback (aiosmtpd): STARTTLS on a self-signed
certificate the client trusts, login, a multipart/alternative message with the Markdown and a
safe HTML part, the subject on one line and a Message-ID from the delivery id; plain SMTP when
STARTTLS is off; and the server's 4xx, 5xx and silences read as retry later or refused. The
server is on loopback, so every sender here allows private addresses
(test_email_address_policy.py covers the refusals)."""

from __future__ import annotations

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    Destination,
    DestinationKind,
    Rejected,
    RetryLater,
)
from runner.delivery.email import EmailSender
from tests.support.chat_webhooks import long_digest
from tests.support.deliveries import digest_content
from tests.support.servers import free_port
from tests.support.smtp import (
    PASSWORD,
    USERNAME,
    MailSink,
    SelfSigned,
    smtp_server,
)


def content(title: str = "ops-team digest", delivery_id: str = "dlv-42") -> DeliveryContent:
    link = "https://digestd.example/d/7"
    return digest_content(long_digest(5), delivery_id=delivery_id, title=title, link=link)


def destination(sink: MailSink, **settings: str) -> Destination:
    base = {
        "host": sink.host,
        "port": str(sink.port),
        "sender": "digests@digestd.example",
        "recipients": "ann@team.example, bob@team.example",
        "starttls": "true",
        "username": USERNAME,
    }
    return Destination(
        3,
        "inbox",
        DestinationKind.EMAIL,
        settings={**base, **settings},
        secrets={"password": PASSWORD},
    )


async def test_a_digest_arrives_over_starttls_with_both_parts(
    tls_server: MailSink, certificate: SelfSigned
) -> None:
    sender = EmailSender(allow_private=True, tls_context=certificate.client_context())
    outcome = await sender.send(content(), destination(tls_server))
    assert outcome == Delivered(status=250, parts=1)
    [mail] = tls_server.received
    assert mail.over_tls and mail.login == USERNAME
    assert mail.sender == "digests@digestd.example"
    assert mail.recipients == ["ann@team.example", "bob@team.example"]
    message = mail.message
    assert message["Subject"] == "ops-team digest"
    assert message["Message-ID"] == "<digestd.dlv-42@digestd.example>"
    assert message.get_content_type() == "multipart/alternative"
    plain = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert plain is not None and html is not None
    # SMTP carries CRLF line ends; the text is the digest's Markdown, line for line.
    text = plain.get_content().replace("\r\n", "\n").rstrip("\n")
    assert text == long_digest(5).rstrip() + "\n\nRead the full digest: https://digestd.example/d/7"
    body = html.get_content()
    assert "<h1>ops-team &lt;!channel&gt; digest</h1>" in body
    assert "<li>Item 3: rotate the &lt;@U00003&gt; key &amp; tell *everyone* @here" in body
    assert '<a href="https://digestd.example/d/7">Read the full digest</a>' in body


async def test_a_title_cannot_add_a_header_and_a_resend_keeps_its_message_id(
    tls_server: MailSink, certificate: SelfSigned
) -> None:
    sender = EmailSender(allow_private=True, tls_context=certificate.client_context())
    hostile = content("digest\r\nBcc: eve@evil.example\r\n\r\nbody", "dlv 7/<x>")
    for _ in range(2):
        assert isinstance(await sender.send(hostile, destination(tls_server)), Delivered)
    first, second = (mail.message for mail in tls_server.received)
    assert first["Subject"] == "digest Bcc: eve@evil.example body"
    assert first["Bcc"] is None and second["Bcc"] is None
    assert first["Message-ID"] == second["Message-ID"] == "<digestd.dlv-7-x@digestd.example>"
    assert all(
        mail.recipients == ["ann@team.example", "bob@team.example"] for mail in tls_server.received
    )


async def test_plain_smtp_when_starttls_is_off() -> None:
    with smtp_server(None) as sink:
        outcome = await EmailSender(allow_private=True).send(
            content(), destination(sink, starttls="false", username="")
        )
    assert outcome == Delivered(status=250, parts=1)
    assert [mail.over_tls for mail in sink.received] == [False]
    # A login is never sent in the clear.
    refused = await EmailSender(allow_private=True).send(
        content(), destination(sink, starttls="false")
    )
    assert refused == Rejected("email destination logs in without starttls")


async def test_smtp_replies_map_to_outcomes(tls_server: MailSink, certificate: SelfSigned) -> None:
    sender = EmailSender(allow_private=True, tls_context=certificate.client_context())
    tls_server.data_replies.append("451 4.3.0 Try again later")
    assert await sender.send(content(), destination(tls_server)) == RetryLater(
        "smtp server deferred (451)"
    )
    tls_server.data_replies.append("554 5.6.0 Message rejected")
    assert await sender.send(content(), destination(tls_server)) == Rejected(
        "smtp server refused (554)"
    )
    tls_server.rcpt_replies += ["550 5.1.1 No such user", "550 5.1.1 No such user"]
    assert await sender.send(content(), destination(tls_server)) == Rejected(
        "smtp recipients refused (550)"
    )
    tls_server.rcpt_replies += ["450 4.2.1 Mailbox busy", "450 4.2.1 Mailbox busy"]
    assert await sender.send(content(), destination(tls_server)) == RetryLater(
        "smtp recipients deferred (450)"
    )
    wrong_password = destination(tls_server)
    wrong_password = Destination(
        3, "inbox", DestinationKind.EMAIL, wrong_password.settings, {"password": "nope"}
    )
    assert await sender.send(content(), wrong_password) == Rejected("smtp login refused (535)")
    assert tls_server.received == []


async def test_an_untrusted_certificate_or_no_server_never_sends(tls_server: MailSink) -> None:
    # The system's trust store does not know the test's self-signed certificate.
    untrusted = await EmailSender(allow_private=True).send(content(), destination(tls_server))
    assert untrusted == Rejected("smtp server's tls certificate is not trusted")
    with smtp_server(None) as plain:
        no_starttls = await EmailSender(allow_private=True).send(content(), destination(plain))
    assert no_starttls == Rejected("smtp server lacks starttls, login or utf-8 addresses")
    nobody = Destination(
        3,
        "inbox",
        DestinationKind.EMAIL,
        {**destination(tls_server).settings, "port": str(free_port())},
    )
    assert await EmailSender(allow_private=True, timeout_seconds=3).send(
        content(), nobody
    ) == RetryLater("smtp connection failed")
    assert tls_server.received == [] and plain.received == []


async def test_bad_settings_are_refused_before_connecting(tls_server: MailSink) -> None:
    for settings, reason in [
        ({"recipients": "ann@team.example\r\nRCPT TO:<eve@evil.example>"}, "recipients"),
        ({"recipients": ""}, "recipients"),
        ({"sender": "Digests <digests@digestd.example>"}, "sender"),
        ({"host": ""}, "host"),
        ({"port": "smtp"}, "port"),
    ]:
        outcome = await EmailSender(allow_private=True).send(
            content(), destination(tls_server, **settings)
        )
        assert isinstance(outcome, Rejected) and reason in outcome.reason
    assert tls_server.received == []
