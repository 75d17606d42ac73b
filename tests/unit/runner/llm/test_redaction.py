"""Redaction before a model call: what each detector finds and leaves, placeholders stable within
a session and never colliding with the text, exact restoration (also inside longer quotes and in
JSON's escaped form), and the endpoint policy of DIGESTD_REDACT."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from pydantic import ValidationError

from runner.core.chunks import chunk_messages
from runner.llm import redaction
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM
from runner.llm.redaction import (
    RedactionSession,
    Span,
    detect,
    is_loopback_endpoint,
    luhn_valid,
    redact_request,
    redact_request_off_loop,
    redaction_enabled,
    redaction_scope,
)
from server.settings import Settings
from tests.support.llm import make_extractor, make_window, scripted

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK_TOKEN = "xoxb-2048-1234567890-" + "AbCdEfGhIjKlMnOp"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


def kinds(text: str) -> list[tuple[str, str]]:
    return [(kind, text[start:end]) for start, end, kind in detect(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "write to ops.team+digest@example.co.uk today",
            [("email", "ops.team+digest@example.co.uk")],
        ),
        (
            "=== tvon [tvon@dsl093-119.blt1.speakeasy.net] has joined",
            [("email", "tvon@dsl093-119.blt1.speakeasy.net")],
        ),
        ("call me on +44 20 7946 0958", [("phone", "+44 20 7946 0958")]),
        ("or (415) 555-2671 after six", [("phone", "(415) 555-2671")]),
        ("call 415-555-2671.", [("phone", "415-555-2671")]),
        (f"export GITHUB_TOKEN={GITHUB_TOKEN}", [("token", GITHUB_TOKEN)]),
        (f"slack bot {SLACK_TOKEN} works", [("token", SLACK_TOKEN)]),
        ("AWS_ACCESS_KEY_ID AKIAIOSFODNN7EXAMPLE", [("token", "AKIAIOSFODNN7EXAMPLE")]),
        (
            "key sk-proj-4fGh7JkL9mNp2QrS5tUv in the config",
            [("token", "sk-proj-4fGh7JkL9mNp2QrS5tUv")],
        ),
        (f"Authorization: Bearer {JWT}", [("token", JWT)]),
        ("password=Zq8vR2mX4kP9tL6w", [("token", "Zq8vR2mX4kP9tL6w")]),
        ("ssh to 192.168.1.20 then 10.0.0.1", [("ip", "192.168.1.20"), ("ip", "10.0.0.1")]),
        (
            "bind to fe80::1ff:fe23:4567:890a or ::1",
            [("ip", "fe80::1ff:fe23:4567:890a"), ("ip", "::1")],
        ),
        ("card 4111 1111 1111 1111 expires", [("card", "4111 1111 1111 1111")]),
        ("amex 378282246310005.", [("card", "378282246310005")]),
    ],
)
def test_each_kind_is_found(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "upgrade linux-2.6.32.21 and v1.2.3.4, then 1.2.3.4.5",  # versions, not addresses
        "999.1.1.1 is not an address",  # invalid octet: ipaddress says no
        "std::vector and dead::beef at 12:30:45",  # C++ and times are not IPv6
        "4111111111111112 fails Luhn",
        "message 402526279340621824 and 1234567812345670",  # snowflake id; Luhn ok, no network
        "token=aaaaaaaaaaaaaaaaaaaa and password=correcthorsebattery",  # no entropy / no digits
        "at 2024-05-01 10:00:00 the build 1234 took 56 s on port 8080",
        "refs bits.3265636944 are ids, as is /thread-4175611950/",
        "the kernel 2.6.8.1 and version 1.1.2.1",
        "my address is not@valid and nor is @handle",
    ],
)
def test_what_is_not_personal_data_is_left(text: str) -> None:
    assert kinds(text) == []
    assert RedactionSession().redact(text) is text


def test_luhn() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112") and not luhn_valid("79927398710")


def test_round_trip_is_exact_and_placeholders_are_stable() -> None:
    session = RedactionSession()
    first = f"mail alice@example.org, token {GITHUB_TOKEN}, host 203.0.113.9"
    second = f"again alice@example.org and bob@example.org; {GITHUB_TOKEN}"
    shown_first, shown_second = session.redact(first), session.redact(second)
    assert shown_first == "mail «EMAIL_1», token «TOKEN_1», host «IP_1»"
    assert shown_second == "again «EMAIL_1» and «EMAIL_2»; «TOKEN_1»"
    assert session.restore(shown_first) == first and session.restore(shown_second) == second
    assert session.redaction_counts() == {"email": 2, "token": 1, "ip": 1}


def test_text_without_secrets_is_unchanged_byte_for_byte() -> None:
    text = "Ünïcode — ok\u00a0\n\tno data here: 3 files, 1.2.3 and «guillemets» alone"
    session = RedactionSession()
    assert session.redact(text) == text
    assert session.restore(text) == text and session.restore_json(json.dumps(text)) == json.dumps(
        text
    )


def test_a_users_own_placeholder_text_cannot_collide() -> None:
    session = RedactionSession()
    text = "literal «EMAIL_1» beside carol@example.net"
    shown = session.redact(text)
    assert shown == "literal «QUOTED_1» beside «EMAIL_1»"
    assert session.restore(shown) == text
    assert session.redaction_counts() == {"email": 1}  # the user's text is not personal data


def test_placeholders_are_restored_inside_longer_quotes_and_escaped_json() -> None:
    session = RedactionSession()
    session.redact("reach dave@example.com")
    echoed = json.dumps({"quote": "please reach «EMAIL_1» soon"})  # ensure_ascii: \u00ab
    assert "\\u00ab" in echoed
    assert json.loads(session.restore_json(echoed)) == {
        "quote": "please reach dave@example.com soon"
    }
    raw = json.dumps({"quote": "«EMAIL_1»!"}, ensure_ascii=False)
    assert json.loads(session.restore_json(raw)) == {"quote": "dave@example.com!"}
    # A placeholder this session never issued, and an escaped backslash, stay as they are.
    assert session.restore("«EMAIL_9»") == "«EMAIL_9»"
    literal = json.dumps({"q": "\\u00abEMAIL_1\\u00bb"})
    assert session.restore_json(literal) == literal


def _request() -> dict[str, Any]:
    echoed = json.dumps({"quote": "eve@example.com"}, ensure_ascii=False)
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Example: admin@example.com"},
            {"role": "user", "content": "<message>eve@example.com &amp; 198.51.100.7</message>"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "t", "arguments": echoed}}
                ],
            },
        ],
        "tools": [{"type": "function"}],
    }


def test_requests_are_redacted_except_the_system_prompt() -> None:
    session = RedactionSession()
    request = _request()
    sent = redact_request(request, session)
    assert sent["messages"][0] == request["messages"][0]
    assert sent["messages"][1]["content"] == "<message>«EMAIL_1» &amp; «IP_1»</message>"
    arguments = sent["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"quote": "«EMAIL_1»"}
    assert request["messages"][1]["content"].startswith("<message>eve@")  # input untouched


def test_a_scope_counts_into_the_jobs_stats() -> None:
    stats: dict[str, object] = {}
    with redaction_scope(stats) as session:
        session.redact("a@example.com b@example.com a@example.com 4111-1111-1111-1111")
    assert stats["redactions"] == {"email": 2, "card": 1}


@pytest.mark.parametrize(
    ("base_url", "loopback"),
    [
        ("http://localhost:8080/v1", True),
        ("http://127.0.0.1:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://llm.localhost/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://192.168.1.5:8000/v1", False),  # another machine on the network
        (None, False),
    ],
)
def test_auto_redacts_for_every_endpoint_off_loopback(base_url: str | None, loopback: bool) -> None:
    assert is_loopback_endpoint(base_url) is loopback
    assert redaction_enabled("auto", base_url) is not loopback
    assert redaction_enabled("always", base_url) and not redaction_enabled("never", base_url)
    assert LLMConfig(base_url=base_url, redact="auto").redacts is not loopback
    with pytest.raises(ValueError, match="redact"):
        LLMConfig(base_url=base_url, redact="sometimes")  # type: ignore[arg-type]


# A made-up key's shape: the base64 lines of a PEM block, not a real key.
PEM_LINES = ["MIIEowIBAAKCAQEAv3Qn8yZ0fJk2pX7wR4cLm9sT1uV6bN0dE5gH8iJ2kL4mO7pQ", "r9sU1vW3xY5z"]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_LINES) + "\n-----END RSA PRIVATE KEY-----"


def test_a_pasted_private_key_is_hidden_line_by_line_and_restored_exactly() -> None:
    text = f"here is the deploy key, don't share:\n{PEM}\nthanks"
    assert kinds(text) == [("token", line) for line in PEM_LINES]
    session = RedactionSession()
    seen = session.redact(text)
    assert PEM_LINES[0] not in seen and "BEGIN RSA PRIVATE KEY" in seen
    assert session.restore(seen) == text
    # A key cut off by the message's end is still hidden.
    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_LINES[0]
    assert kinds(cut) == [("token", PEM_LINES[0])]
    # A public key or a certificate is not a secret.
    assert kinds(PEM.replace("PRIVATE KEY", "PUBLIC KEY")) == []


async def test_off_the_loop_a_request_is_redacted_exactly_as_on_it() -> None:
    """The same placeholders, given in the same order, the same counts: only where the
    detection runs differs."""
    request = _request()
    request["messages"].append(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"call +1 415 555 0132, token {GITHUB_TOKEN}"},
                {"type": "text", "text": "bob@example.org then eve@example.com again"},
            ],
        }
    )
    on_loop, off_loop = RedactionSession(), RedactionSession()
    for _ in range(2):  # the second time, every value has its placeholder already
        expected = redact_request(request, on_loop)
        assert await redact_request_off_loop(request, off_loop) == expected
    assert (
        off_loop.redaction_counts()
        == on_loop.redaction_counts()
        == {
            "email": 2,
            "phone": 1,
            "token": 1,
            "ip": 1,
        }
    )
    assert off_loop.restore(json.dumps(expected)) == on_loop.restore(json.dumps(expected))
    assert request["messages"][1]["content"].startswith("<message>eve@")  # input untouched


async def test_a_model_call_detects_personal_data_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Detection (about 30 ms for a chunk) runs in a thread: the loop keeps answering
    heartbeats and the API meanwhile. The model still sees placeholders only."""
    detected_in: dict[str, int] = {}

    def recording_detect(text: str, phone_region: str = "US") -> list[Span]:
        detected_in[text] = threading.get_ident()
        return detect(text, phone_region)

    monkeypatch.setattr(redaction, "detect", recording_detect)
    window = make_window(["mail eve@example.com about the outage", "call +1 415 555 0132 now"])
    endpoint = FakeLLM(scripted())
    extractor = make_extractor(endpoint, redact="always")
    with redaction_scope() as session:
        await extractor.extract_chunk(chunk_messages(list(window.messages), 4000)[0], [])
    sent = json.dumps(endpoint.requests[0]["messages"], ensure_ascii=False)
    assert "eve@example.com" not in sent and "«EMAIL_1»" in sent and "«PHONE_1»" in sent
    assert session.redaction_counts() == {"email": 1, "phone": 1}
    (user_text,) = [text for text in detected_in if "eve@example.com" in text]
    assert detected_in[user_text] != threading.get_ident()


def test_national_phone_numbers_are_read_in_the_sessions_region() -> None:
    text = "Ring the London office on 020 7946 0958, or +1 415 555 0132."
    assert kinds(text) == [("phone", "+1 415 555 0132")]  # US by default
    british = RedactionSession(phone_region="GB")
    assert british.redact(text) == "Ring the London office on «PHONE_1», or «PHONE_2»."
    assert detect(text, "GB") == detect(text, "gb".upper())


async def test_the_phone_region_setting_reaches_what_the_model_is_sent() -> None:
    window = make_window(["Ring the London office on 020 7946 0958 about the outage"])
    endpoint = FakeLLM(scripted())
    settings = Settings(digestd_redact_phone_region="gb", digestd_redact="always")
    assert settings.digestd_redact_phone_region == "GB"
    extractor = make_extractor(endpoint, redact=settings.digestd_redact, redact_phone_region="GB")
    with redaction_scope() as session:
        await extractor.extract_chunk(chunk_messages(list(window.messages), 4000)[0], [])
    sent = json.dumps(endpoint.requests[0]["messages"], ensure_ascii=False)
    assert "7946 0958" not in sent and "«PHONE_1»" in sent
    assert session.redaction_counts() == {"phone": 1}


@pytest.mark.parametrize("region", ["XX", "USA", ""])
def test_an_unknown_phone_region_is_refused(region: str) -> None:
    with pytest.raises(ValidationError):
        Settings(digestd_redact_phone_region=region)
    with pytest.raises(ValueError, match="redact_phone_region"):
        LLMConfig(base_url="http://llm.test/v1", redact_phone_region=region)
