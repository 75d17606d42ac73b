"""A hand-made window for the entity tests and the tests that list entities."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.support.schema import gql  # noqa: F401 (a fixture)

T0 = datetime(2024, 4, 29, 9, 0, tzinfo=UTC)  # a Monday: ISO week 2024-W18


# Each window is one conversation of four messages and two people: the offline extractor's
# topic, titled by its opening line.
WINDOW_ONE = [
    ("ann", "nginx returns 502 after the docker upgrade"),
    ("bob", "ann: restart nginx with the new docker network"),
    ("ann", "bob: that did not help, still 502 errors from the proxy"),
    ("bob", "ann: then the upstream port changed, check the nginx config"),
]
