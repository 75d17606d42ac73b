"""Conditional GET for polling clients: an entity tag per answer, 304 when it has not changed.

The tag is a hash of the answer's bytes. A tag from a job's version (its `updated_at`) would need
to know every row a query reads (a job query may select its digest, its channel, its stats), and a
tag that misses one of them is a stale answer served as fresh; the answer's own bytes change
exactly when anything it shows changes, whatever the query. So the query still runs (one keyed
read for `job(id)`); what a 304 saves is the body on the wire and the client's decoding of it.

Only GET answers are conditional: HTTP gives If-None-Match on other methods (a POST) a 412, not
a 304, so a POST is answered in full, with its tag, as before.
"""

from __future__ import annotations

import hashlib


def entity_tag(body: bytes) -> str:
    """A strong entity tag of `body` (128 bits of BLAKE2b, quoted)."""
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def none_match(if_none_match: str | None, tag: str) -> bool:
    """Whether an If-None-Match header names `tag` (weak comparison, as RFC 9110 asks of it)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    wanted = tag.removeprefix("W/")
    return any(
        candidate.strip().removeprefix("W/") == wanted for candidate in if_none_match.split(",")
    )
