"""Downloads of a digest, report or catch-up as a file: `GET /export/digests/{id}.{md|html|json}`,
`GET /export/reports/{id}.{md|html|json}` and `GET /export/catchups/{person}.{md|html|json}
?since=2d|ISO`, behind the same tokens as /graphql (server/auth.py).

`id` is the global id the API shows (or, like the API's arguments, a numeric id). The answer is
the file of runner/exports with its media type and `Content-Disposition: attachment` under a
name made of the kind, the row id and the format only (nothing a client or a channel chose; a
catch-up's, of the person's name cut to ASCII letters, digits and `-`). An
unknown id is a 404, a malformed one or an unknown format a 400, each with the API's error body
(`{"errors": [{"message", "extensions": {"code"}}]}`); an HTML file also carries a
Content-Security-Policy that lets it load nothing, should a browser show it in place."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import asyncpg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from db.outage import is_database_outage
from runner.catchup.store import CatchUpRefused
from runner.exports.html import CONTENT_SECURITY_POLICY
from runner.exports.model import ExportKind
from runner.exports.store import FORMATS, ExportedFile, export_catch_up, export_file
from schema.errors import (
    BAD_ID,
    BAD_USER_INPUT,
    INTERNAL,
    INTERNAL_MESSAGE,
    NOT_FOUND,
    UNAVAILABLE,
    UNAVAILABLE_MESSAGE,
)
from schema.types.ids import DIGEST, REPORT, cli_row_id
from server.cli_catchup import parse_since
from server.request_id import request_id_of

logger = logging.getLogger(__name__)


def _error(status: int, message: str, code: str, request: Request | None = None) -> Response:
    extensions = {"code": code}
    if request is not None:  # a server fault: the id to find it in the logs, nothing more
        extensions["requestId"] = request_id_of(request.scope)
    return JSONResponse(
        {"errors": [{"message": message, "extensions": extensions}]}, status_code=status
    )


async def export(request: Request, kind: ExportKind, type_name: str) -> Response:
    """The file of the digest or report the path names (module docstring)."""
    name = str(request.path_params["name"])
    identifier, dot, fmt = name.rpartition(".")
    if not dot or fmt not in FORMATS:
        return _error(
            400, f"unknown format {fmt[:20]!r}: ask for .md, .html or .json", BAD_USER_INPUT
        )
    row_id = cli_row_id(identifier, type_name)
    if row_id is None:
        return _error(400, f"invalid {kind} id {identifier[:40]!r}", BAD_ID)
    pool: asyncpg.Pool = request.app.state.pool
    try:
        async with pool.acquire() as connection:
            exported = await export_file(connection, kind, row_id, FORMATS[FORMATS.index(fmt)])
    except Exception as error:
        if is_database_outage(error):
            logger.warning("export of %s %s: database unavailable", kind, row_id)
            return _error(503, UNAVAILABLE_MESSAGE, UNAVAILABLE, request)
        logger.exception("export of %s %s failed", kind, row_id)
        return _error(500, INTERNAL_MESSAGE, INTERNAL, request)
    if exported is None:
        return _error(404, f"no {kind} {identifier[:40]!r}", NOT_FOUND)
    return _file(exported, fmt)


def _file(exported: ExportedFile, fmt: str) -> Response:
    headers = {
        "content-disposition": f'attachment; filename="{exported.filename}"',
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",  # a digest may be deleted or its channel purged
    }
    if fmt == "html":
        headers["content-security-policy"] = CONTENT_SECURITY_POLICY
    return Response(exported.content, media_type=exported.media_type, headers=headers)


async def export_catch_up_file(request: Request) -> Response:
    """A person's catch-up as a file: `/export/catchups/{person}.{fmt}?since=2d|ISO` (`since`
    absent: each channel's read marker). Reads only; nothing is marked read."""
    name = str(request.path_params["name"])
    person, dot, fmt = name.rpartition(".")
    if not dot or fmt not in FORMATS:
        return _error(
            400, f"unknown format {fmt[:20]!r}: ask for .md, .html or .json", BAD_USER_INPUT
        )
    now = datetime.now(UTC)
    try:
        since = parse_since(request.query_params.get("since"), now)
    except ValueError as error:
        return _error(400, str(error).replace("--since", "since", 1)[:200], BAD_USER_INPUT)
    pool: asyncpg.Pool = request.app.state.pool
    try:
        async with pool.acquire() as connection:
            exported = await export_catch_up(
                connection, person, since, FORMATS[FORMATS.index(fmt)], now=now
            )
    except CatchUpRefused as refused:
        return _error(400, refused.message, BAD_USER_INPUT)
    except Exception as error:
        if is_database_outage(error):
            logger.warning("export of a catch-up: database unavailable")
            return _error(503, UNAVAILABLE_MESSAGE, UNAVAILABLE, request)
        logger.exception("export of a catch-up failed")
        return _error(500, INTERNAL_MESSAGE, INTERNAL, request)
    return _file(exported, fmt)


def _endpoint(kind: ExportKind, type_name: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await export(request, kind, type_name)

    return endpoint


def export_routes() -> Mount:
    """The download routes, under one prefix (the access log labels them `/export/`)."""
    return Mount(
        "/export",
        routes=[
            Route("/digests/{name:path}", _endpoint("digest", DIGEST), methods=["GET"]),
            Route("/reports/{name:path}", _endpoint("report", REPORT), methods=["GET"]),
            Route("/catchups/{name:path}", export_catch_up_file, methods=["GET"]),
        ],
    )
