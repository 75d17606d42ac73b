"""Fixtures of the delivery tests: a self-signed certificate and a STARTTLS mail server that
presents it (tests/support/smtp.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.smtp import MailSink, SelfSigned, self_signed_certificate, smtp_server


@pytest.fixture
def certificate(tmp_path: Path) -> SelfSigned:
    return self_signed_certificate(tmp_path)


@pytest.fixture
def tls_server(certificate: SelfSigned) -> Iterator[MailSink]:
    with smtp_server(certificate) as sink:
        yield sink
