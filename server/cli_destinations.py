"""`digestd destination add NAME --kind KIND ...`, `destination list` and `destination delete
NAME`: delivery destinations from the command line, through the same `runner/delivery/store.py`
as the API (with --json: the API's field names and global ids; never a secret).

Secrets on a command line are seen by `ps` and kept in shell history, so `--url -`, `--secret
-` and `--password -` read them from standard input instead, one line each, in that order; a
webhook given no `--secret` gets a random signing secret, printed once on stdout for the
receiver's configuration and never shown again."""

from __future__ import annotations

import argparse
import secrets as random_secrets
import sys
from typing import Any, TextIO

from db import deliveries as delivery_queries
from db import pages
from db.models import Destination
from runner.delivery.store import DestinationSpec, create_destination, delete_destination
from runner.delivery.webhook import SIGNING_SECRET, URL_SECRET
from runner.triggers import TriggerRefused
from schema.types.ids import DESTINATION, global_id
from server.cli_json import emit, refuse
from server.cli_text import one_line, say
from server.runtime import Runtime

COMMAND = "digestd destination"
FROM_STDIN = "-"


def destination_json(row: Destination) -> dict[str, Any]:
    return {
        "id": global_id(DESTINATION, row.id),
        "name": row.name,
        "kind": row.kind.upper(),
        "hint": row.hint,
        "events": [event.replace(".", "_").upper() for event in row.events],
        "settings": [{"key": k, "value": str(v)} for k, v in sorted(row.settings.items())],
        "createdAt": row.created_at.isoformat(),
    }


def destination_line(row: Destination) -> str:
    events = f"  events {','.join(row.events)}" if row.events else ""
    hint = f"  {one_line(row.hint)}" if row.hint else ""
    return f"destination {row.id}  {one_line(row.name)}  {row.kind}{hint}{events}"


def secrets_of(args: argparse.Namespace, stdin: TextIO) -> dict[str, str]:
    """The secrets the arguments give, those given as `-` read from `stdin` in the order url,
    secret, password."""
    given = {URL_SECRET: args.url, SIGNING_SECRET: args.secret, "password": args.password}
    found: dict[str, str] = {}
    for key, value in given.items():
        if value == FROM_STDIN:
            value = stdin.readline().rstrip("\r\n")
        if value:
            found[key] = value
    return found


def _pairs(values: list[str], what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in values:
        key, equals, value = item.partition("=")
        if not equals:
            raise ValueError(f"{what} {item!r} is not KEY=VALUE")
        found[key.strip()] = value
    return found


async def destination(runtime: Runtime, args: argparse.Namespace) -> int:
    if args.action == "list":
        return await _list(runtime, as_json=args.json)
    if args.action == "delete":
        return await _delete(runtime, args)
    try:
        settings = _pairs(args.setting, "--setting")
    except ValueError as error:
        return refuse(COMMAND, str(error), args.json)
    secrets = secrets_of(args, sys.stdin)
    generated = None
    if args.kind == "webhook" and SIGNING_SECRET not in secrets:
        generated = secrets[SIGNING_SECRET] = random_secrets.token_urlsafe(32)
    spec = DestinationSpec(args.name, args.kind, settings, secrets, args.event)
    try:
        async with runtime.pool.acquire() as connection:
            row = await create_destination(connection, spec)
    except TriggerRefused as refused:
        return refuse(COMMAND, refused.message, args.json)
    if args.json:
        shown = destination_json(row)
        if generated:
            shown["signingSecret"] = generated
        emit({"destination": shown})
    else:
        say(destination_line(row))
        if generated:
            print(f"signing secret (shown once): {generated}")
    print(f"destination {row.name} added", file=sys.stderr)
    return 0


async def _delete(runtime: Runtime, args: argparse.Namespace) -> int:
    try:
        async with runtime.pool.acquire() as connection:
            found = await delivery_queries.destinations_by_names(connection, [args.name])
            if not found:
                return refuse(COMMAND, f"no destination named {args.name!r}", args.json)
            row = await delete_destination(connection, found[0].id)
    except TriggerRefused as refused:
        return refuse(COMMAND, refused.message, args.json)
    if args.json:
        emit({"delete": destination_json(row)})
    print(f"destination {row.name} deleted", file=sys.stderr)
    return 0


async def _list(runtime: Runtime, *, as_json: bool) -> int:
    rows: list[Destination] = []
    cursor: str | None = None
    async with runtime.pool.acquire() as connection:
        while True:
            page = await pages.fetch_page(
                connection, pages.DESTINATIONS, {}, first=pages.MAX_PAGE_SIZE, after=cursor
            )
            rows.extend(page.rows)
            if not page.has_next_page or not page.rows:
                break
            cursor = page.cursor_of(page.rows[-1])
    if as_json:
        emit({"destinations": [destination_json(row) for row in rows]})
        return 0
    for row in rows:
        say(destination_line(row))
    if not rows:
        print("no destinations", file=sys.stderr)
    return 0
