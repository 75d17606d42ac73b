"""The console link of a delivery (runner/delivery/links.py): the page of its digest, job or
catch-up under DIGESTD_PUBLIC_URL, none without it; the words each sender shows for it, escaped
as the rest of its message; and the setting's check."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs, unquote, urlsplit
from uuid import UUID

import pytest
from pydantic import ValidationError

from db.models import Delivery
from runner.delivery.contract import DeliveryContent, DeliveryEvent
from runner.delivery.email import SmtpSettings, build_message
from runner.delivery.links import ConsoleLinks, delivery_link
from runner.delivery.markup import discord_units, html_body, slack_units
from runner.delivery.outbox import DeliveryConfig, delivery_content
from schema.types.ids import DIGEST, DIGEST_JOB, global_id
from server.settings import Settings

LINKS = ConsoleLinks("https://digestd.example/team")


def test_each_event_links_to_its_console_page() -> None:
    digest = delivery_link(LINKS, DeliveryEvent.DIGEST_READY, 7, 3, {})
    assert digest is not None and digest.startswith("https://digestd.example/team/#/digest/")
    assert unquote(digest.rpartition("/")[2]) == global_id(DIGEST, 7)
    for event in (DeliveryEvent.JOB_SUCCEEDED, DeliveryEvent.JOB_FAILED):
        job = delivery_link(LINKS, event, 7, 3, {})
        assert job is not None and unquote(job.rpartition("/#/job/")[2]) == global_id(DIGEST_JOB, 3)
    person = "Zoë & <co>#1"
    since = "2026-11-01T09:00:00+00:00"
    payload = {"catch_up": {"person": person, "since": since}}
    catch_up = delivery_link(LINKS, DeliveryEvent.CATCH_UP, None, None, payload)
    assert catch_up is not None
    route, _, query = catch_up.partition("/#/catchup?")
    assert route == "https://digestd.example/team"
    assert parse_qs(query) == {"person": [person], "since": [since]}
    no_since = {"catch_up": {"person": "ann", "since": None}}
    assert delivery_link(LINKS, DeliveryEvent.CATCH_UP, None, None, no_since) == (
        "https://digestd.example/team/#/catchup?person=ann"
    )


def test_no_public_url_no_link() -> None:
    assert delivery_link(None, DeliveryEvent.DIGEST_READY, 7, 3, {}) is None
    assert DeliveryConfig(worker_id="w").links is None
    assert Settings().digestd_public_url is None
    assert Settings(digestd_public_url="").digestd_public_url is None


def _delivery(event: DeliveryEvent) -> Delivery:
    now = datetime(2026, 11, 2, tzinfo=UTC)
    return Delivery(
        id=1,
        delivery_id=UUID("7f9b3d5e-0000-4000-8000-000000000001"),
        destination_id=1,
        event=event.value,
        digest_id=7,
        job_id=3,
        state="delivering",
        attempts=1,
        next_attempt_at=now,
        created_at=now,
    )


def test_the_json_body_carries_the_link_or_null() -> None:
    stored = {"title": "ops", "markdown": "# ops", "payload": {"digest": {"id": 7}}}
    delivery = _delivery(DeliveryEvent.DIGEST_READY)
    linked = delivery_content(
        delivery, stored, DeliveryConfig("w", public_url=LINKS.base_url).links
    )
    assert linked.link == linked.payload["link"] == LINKS.digest(7)
    bare = delivery_content(delivery, stored)
    assert bare.link is None and bare.payload["link"] is None


def test_each_sender_names_the_link_and_escapes_it() -> None:
    link = "https://digestd.example/#/catchup?person=a|b(c)<d>"
    target = "https://digestd.example/#/catchup?person=a%7Cb%28c%29%3Cd%3E"
    slack = slack_units("# hi", link, "Read the full catch-up")
    assert slack[-1] == f"<{target}|Read the full catch-up>"
    assert discord_units("# hi", link, "Open the job")[-1] == f"[Open the job]({target})"
    page = html_body("# hi", "t", link, "Read the full catch-up")
    assert f'<p><a href="{target}">Read the full catch-up</a></p>' in page
    assert slack_units("# hi", "javascript:alert(1)") == ["*hi*"]


def test_an_email_shows_the_link_in_its_text_and_html_parts() -> None:
    content = DeliveryContent(
        delivery_id="dlv-1",
        event=DeliveryEvent.JOB_FAILED,
        title="Channel job 3 failed",
        markdown="**Channel job 3 failed**",
        payload={},
        link=LINKS.job(3),
    )
    smtp = SmtpSettings("mail.example", 587, "d@example.com", ("a@example.com",), True, None, None)
    message = build_message(content, smtp)
    text, html = (part.get_content() for part in message.iter_parts())
    assert f"Open the job: {LINKS.job(3)}" in text
    assert f'<a href="{LINKS.job(3)}">Open the job</a>' in html


@pytest.mark.parametrize("url", ["javascript:alert(1)", "digestd.example", "https://", "ftp://x"])
def test_the_public_url_must_be_http(url: str) -> None:
    with pytest.raises(ValidationError):
        Settings(digestd_public_url=url)


def test_the_public_url_loses_its_trailing_slash() -> None:
    assert Settings(digestd_public_url=" https://d.example/x/ ").digestd_public_url == (
        "https://d.example/x"
    )
    assert urlsplit(ConsoleLinks("https://d.example/x").digest(1)).path == "/x/"
