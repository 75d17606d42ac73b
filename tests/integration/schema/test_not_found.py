"""A `NotFoundError` names the id its client sent, through the real HTTP /graphql: a client that
sent a global id finds that global id in the message and in `id`, never the row number behind
it, which it has never seen; a client that sent a legacy numeric id finds that one."""

from __future__ import annotations

import asyncpg
import httpx

from schema.types.ids import CHANNEL, DIGEST_JOB, DOCUMENT, SCHEDULE, global_id
from tests.support.api import gql
from tests.support.database import add_channel, messages

WRITER_TOKEN = "writer-token-1"
NOT_FOUND = "... on NotFoundError { message code id }"

MUTATIONS = {
    "triggerDigest": f"mutation($id: ID!) {{ triggerDigest(channelId: $id) {{ {NOT_FOUND} }} }}",
    "cancelJob": f"mutation($id: ID!) {{ cancelJob(id: $id) {{ {NOT_FOUND} }} }}",
    "triggerDocumentDigest": (
        'mutation($id: ID!) { triggerDocumentDigest(documentId: $id, query: "why?") '
        f"{{ {NOT_FOUND} }} }}"
    ),
    "createSchedule": (
        f'mutation($id: ID!) {{ createSchedule(channelId: $id, cron: "0 9 * * *") {{ {NOT_FOUND} }} }}'
    ),
    "pauseSchedule": f"mutation($id: ID!) {{ pauseSchedule(id: $id) {{ {NOT_FOUND} }} }}",
}
SUBJECTS = {
    "triggerDigest": (CHANNEL, "channel"),
    "cancelJob": (DIGEST_JOB, "job"),
    "triggerDocumentDigest": (DOCUMENT, "document"),
    "createSchedule": (CHANNEL, "channel"),
    "pauseSchedule": (SCHEDULE, "schedule"),
}
REPORT = f"""mutation($sources: ReportSources!) {{ triggerReport(question: "why?", sources: $sources)
  {{ {NOT_FOUND} }} }}"""


async def test_not_found_names_the_id_the_client_sent(
    db: asyncpg.Pool, api: httpx.AsyncClient
) -> None:
    for field, query in MUTATIONS.items():
        type_name, subject = SUBJECTS[field]
        sent = global_id(type_name, 999)
        answer = (await gql(api, query, {"id": sent}, WRITER_TOKEN))[field]
        assert answer == {
            "message": f"no {subject} with id {sent}",
            "code": "NOT_FOUND",
            "id": sent,
        }, field
        # A legacy numeric id is named as sent too.
        legacy = (await gql(api, query, {"id": "999"}, WRITER_TOKEN))[field]
        assert (legacy["message"], legacy["id"]) == (f"no {subject} with id 999", "999"), field


async def test_a_report_names_the_missing_source_among_the_ones_that_exist(
    db: asyncpg.Pool, api: httpx.AsyncClient
) -> None:
    channel = global_id(CHANNEL, await add_channel(db, "ops", messages([("ann", "hello")])))
    missing = global_id(DOCUMENT, 999)
    sources = {"channelIds": [channel], "documentIds": [missing]}
    answer = (await gql(api, REPORT, {"sources": sources}, WRITER_TOKEN))["triggerReport"]
    assert answer == {
        "message": f"no document with id {missing}",
        "code": "NOT_FOUND",
        "id": missing,
    }
