"""Rules of the asyncio code: what Python 3.11 gets wrong is not used."""

from __future__ import annotations

from tests.support.paths import REPO_ROOT

PRODUCT = sorted(
    path
    for package in ("db", "runner", "schema", "server")
    for path in (REPO_ROOT / package).rglob("*.py")
)


def test_no_wait_for() -> None:
    """On 3.11, `asyncio.wait_for` returns the inner result when a cancellation arrives in the
    tick the inner awaitable finishes: the cancelled task goes on (a subscription waited for
    ever that way). `async with asyncio.timeout(...)` keeps the cancellation."""
    assert len(PRODUCT) > 50
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in PRODUCT
        if "wait_for(" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
