"""Loads db/queries.sql into a dict by name: `QUERIES["claim_next_job"]`.

Each query sits under a `-- name: <name>` header followed by `-- ` description lines; keeping
them in one file makes the hot paths visible and reviewable as SQL.
"""

from __future__ import annotations

import re
from importlib import resources

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def _parse(text: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    headers = list(_HEADER.finditer(text))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body_lines = [
            line
            for line in text[header.end() : end].strip().splitlines()
            if not line.startswith("--")
        ]
        name = header.group(1)
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice in queries.sql")
        queries[name] = "\n".join(body_lines).strip().rstrip(";")
    return queries


QUERIES: dict[str, str] = _parse(resources.files("db").joinpath("queries.sql").read_text("utf-8"))
