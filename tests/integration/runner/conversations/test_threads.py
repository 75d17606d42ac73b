"""Conversations: the pure threading of a channel's messages (runner/conversations/threads.py) and, through
the API, the conversations a digest stores: each with its messages, cited title, participants, times
and state, messages filtered by conversation and showing their parent."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import asyncpg

from runner.conversations.disentangle import link_records
from runner.conversations.threads import (
    StoredConversation,
    ThreadedMessage,
    conversation_title,
    order_window,
    thread_messages,
)
from runner.core.window import Window, WindowMessage
from runner.triggers import trigger_channel_digest
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, global_id
from tests.support.database import BASE_TIME, Msg, add_channel
from tests.support.digests import make_worker
from tests.support.schema import gql

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def _messages(
    rows: list[tuple[str, str, str | None]], start: int = 0, conversation: int | None = None
) -> list[ThreadedMessage]:
    return [
        ThreadedMessage(
            f"m{start + i}",
            author,
            T0 + timedelta(minutes=start + i),
            text,
            reply,
            conversation_id=conversation,
        )
        for i, (author, text, reply) in enumerate(rows)
    ]


CHANNEL_ROWS = [
    ("ann", "How do I mount an NFS share at boot?", None),
    ("bob", "anyone know why my wifi drops every hour?", None),
    ("cid", "ann: put it in /etc/fstab with the _netdev option", None),
    ("dee", "bob, check the power management of the card", None),
    ("ann", "thanks, that worked", "m2"),  # an explicit reply beats addressing
    ("eve", "hello", None),
]


def test_the_default_linker_follows_explicit_replies_and_addressed_answers() -> None:
    messages = _messages(CHANNEL_ROWS)
    assert link_records(messages) == [None, None, 0, 1, 2, None]


def test_threading_makes_conversations_with_cited_titles_and_answered_flags() -> None:
    threading = thread_messages(_messages(CHANNEL_ROWS), {})
    by_root = {c.root_message_id: c for c in threading.conversations if c.root_message_id}
    assert sorted(by_root) == ["m0", "m1", "m5"] and len(by_root) == len(threading.conversations)
    nfs, wifi, hello = by_root["m0"], by_root["m1"], by_root["m5"]
    assert nfs.message_ids == ("m0", "m2", "m4") and nfs.participants == ("ann", "cid")
    assert nfs.answered and wifi.answered and not hello.answered
    assert threading.parents == {
        "m0": None,
        "m1": None,
        "m2": "m0",
        "m3": "m1",
        "m4": "m2",
        "m5": None,
    }
    assert nfs.title is not None and nfs.title.text == "How do I mount an NFS share at boot?"
    assert hello.title is not None and hello.title.text == "hello"  # nothing longer to quote
    for conversation in threading.conversations:
        title = conversation.title
        assert title is not None
        text = next(m.text for m in _messages(CHANNEL_ROWS) if m.message_id == title.message_id)
        assert text[title.char_start : title.char_end] == title.text


def test_a_title_is_cut_at_a_word_and_skips_openers_with_too_few_words() -> None:
    long = "hi\n" + "Why does the kernel " + "really " * 30 + "panic?"
    title = conversation_title(_messages([("ann", long, None)]))
    assert title is not None and title.text.startswith("Why does the kernel")
    assert len(title.text) <= 100 and not title.text.endswith(" ")
    assert long[title.char_start : title.char_end] == title.text


def test_messages_answering_a_stored_conversation_extend_it_and_threaded_ones_stay() -> None:
    context = _messages([("ann", "Is the build broken on main?", None)], conversation=7)
    stored = {7: StoredConversation(7, ("ann",), 1, T0, T0, False)}
    new = _messages(
        [
            ("bob", "ann: yes, since the merge this morning", None),
            ("cid", "who runs the release today?", None),
        ],
        start=1,
    )
    threading = thread_messages(context + new, stored)
    extended, opened = threading.conversations
    assert extended.continues == 7 and extended.root_message_id is None
    assert extended.message_ids == ("m1",) and extended.message_count == 2
    assert extended.participants == ("ann", "bob") and extended.answered
    assert extended.title is None  # a stored conversation keeps its title
    assert opened.continues is None and opened.root_message_id == "m2"
    assert "m0" not in threading.parents  # already threaded: never threaded again


def test_a_linker_pointing_forward_or_at_itself_opens_a_conversation() -> None:
    messages = _messages(CHANNEL_ROWS[:3])
    threading = thread_messages(messages, {}, link=lambda ms: [1, 1, 0])
    assert threading.parents == {"m0": None, "m1": None, "m2": "m0"}


CONVERSATIONS = """
query($filter: ConversationFilter!, $first: Int, $after: String) {
  conversations(filter: $filter, first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { id title state participants messageCount firstAt lastAt
            titlePointer { messageId charStart charEnd resolvedText }
            rootMessage { messageId } }
  }
}"""
MESSAGES = """
query($filter: MessageFilter!) {
  messages(filter: $filter, first: 50) {
    totalCount
    nodes { messageId parent { messageId } conversation { id title } }
  }
}"""


async def test_a_digest_stores_the_conversations_the_api_serves(
    db: asyncpg.Pool, database_url: str
) -> None:
    rows = [(a, t, r) for a, t, r in CHANNEL_ROWS]
    items = [
        Msg(f"m{i}", author, BASE_TIME + timedelta(hours=2 * (i == 5), minutes=i), text, reply)
        for i, (author, text, reply) in enumerate(rows)
    ]
    channel = await add_channel(db, "help", items)
    channel_id = global_id(CHANNEL, channel)
    before = await gql(db, CONVERSATIONS, filter={"channelId": channel_id})
    assert before["conversations"]["nodes"] == []  # no digest has read the channel yet
    async with db.acquire() as connection:
        await trigger_channel_digest(connection, channel, max_attempts=3)
    assert await make_worker(db, database_url).run_once()

    page = (await gql(db, CONVERSATIONS, filter={"channelId": channel_id}))["conversations"]
    nodes = page["nodes"]
    # Newest opened first; "hello" came two hours later, so only it is still ongoing.
    assert [n["rootMessage"]["messageId"] for n in nodes] == ["m5", "m1", "m0"]
    assert [n["state"] for n in nodes] == ["ONGOING", "ANSWERED", "ANSWERED"]
    nfs = nodes[2]
    assert nfs["participants"] == ["ann", "cid"] and nfs["messageCount"] == 3
    assert nfs["titlePointer"]["resolvedText"] == nfs["title"] == CHANNEL_ROWS[0][1]
    answered = await gql(
        db, CONVERSATIONS, filter={"channelId": channel_id, "state": "ANSWERED"}, first=1
    )
    first_page = answered["conversations"]
    assert [n["id"] for n in first_page["nodes"]] == [nodes[1]["id"]]
    assert first_page["pageInfo"]["hasNextPage"]
    second = await gql(
        db,
        CONVERSATIONS,
        filter={"channelId": channel_id, "state": "ANSWERED"},
        first=1,
        after=first_page["pageInfo"]["endCursor"],
    )
    assert [n["id"] for n in second["conversations"]["nodes"]] == [nfs["id"]]

    thread = await gql(db, MESSAGES, filter={"channelId": channel_id, "conversationId": nfs["id"]})
    listed = thread["messages"]["nodes"]
    assert [m["messageId"] for m in listed] == ["m0", "m2", "m4"]
    assert [m["parent"] and m["parent"]["messageId"] for m in listed] == [None, "m0", "m2"]
    assert {m["conversation"]["id"] for m in listed} == {nfs["id"]}
    assert thread["messages"]["totalCount"] == 3  # filtered: the conversation's messages

    # A later digest threads only the new message, into the stored conversation it answers.
    later = [Msg("m6", "bob", BASE_TIME + timedelta(hours=3), "eve: hi, what do you need?")]
    await add_channel(db, "help", later)
    async with db.acquire() as connection:
        await trigger_channel_digest(connection, channel, max_attempts=3)
    assert await make_worker(db, database_url).run_once()
    after = (await gql(db, CONVERSATIONS, filter={"channelId": channel_id}))["conversations"]
    hello = after["nodes"][0]
    assert hello["rootMessage"]["messageId"] == "m5" and hello["messageCount"] == 2
    assert hello["participants"] == ["eve", "bob"] and len(after["nodes"]) == 3


async def test_a_conversation_id_of_another_type_is_a_client_error(db: asyncpg.Pool) -> None:
    channel = await add_channel(db, "empty", [Msg("x1", "ann", BASE_TIME, "hi there")])
    result = await build_schema().execute(
        MESSAGES,
        variable_values={
            "filter": {
                "channelId": global_id(CHANNEL, channel),
                "conversationId": global_id(CHANNEL, channel),
            }
        },
        context_value=Context(pool=db, role=Role.WRITER, config=ApiConfig()),
    )
    assert result.errors is not None and len(result.errors) == 1
    error = result.errors[0]
    assert "conversation" in error.message and error.extensions is not None
    assert error.extensions["code"] == "BAD_ID"


def test_the_title_is_the_openers_question_not_a_helpers_clarifying_one() -> None:
    rows: list[tuple[str, str, str | None]] = [
        ("ann", "My laptop fan is loud. Why does the cooling fan spin all the time?", None),
        ("bob", "ann: which kernel version do you run?", None),
    ]
    title = conversation_title(_messages(rows))
    assert title is not None and title.text == "Why does the cooling fan spin all the time?"
    answer = conversation_title(_messages([("bob", "ann: try the thermald package today", None)]))
    assert answer is not None and answer.text == "try the thermald package today"  # no addressee


def test_a_threaded_window_is_ordered_conversation_by_conversation() -> None:
    messages = _messages(CHANNEL_ROWS)
    window = Window(
        "help",
        tuple(WindowMessage(m.message_id, m.author, m.ts, m.text, m.reply_to) for m in messages),
    )
    ordered = order_window(window, messages, thread_messages(messages, {}))
    assert [m.message_id for m in ordered.messages] == ["m0", "m2", "m4", "m1", "m3", "m5"]
    assert len({m.conversation for m in ordered.messages}) == 3
    assert sorted(ordered.messages, key=lambda m: m.ts) == [
        replace(m, conversation=n.conversation)
        for m, n in zip(window.messages, sorted(ordered.messages, key=lambda m: m.ts), strict=True)
    ]


async def test_a_backfilled_older_message_joins_the_stored_conversation_it_answers(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = [
        Msg(f"m{i}", a, BASE_TIME + timedelta(minutes=i), t, r)
        for i, (a, t, r) in enumerate(CHANNEL_ROWS)
    ]
    channel = await add_channel(db, "help", items)
    async with db.acquire() as connection:
        await trigger_channel_digest(connection, channel, max_attempts=3)
    assert await make_worker(db, database_url).run_once()
    # An export arrives late with a message from between m0 and m2 answering ann's question.
    late = Msg(
        "b1",
        "fay",
        BASE_TIME + timedelta(minutes=1, seconds=30),
        "ann: mount it with nfs4 and the _netdev option in /etc/fstab",
        None,
    )
    await add_channel(db, "help", [late])
    async with db.acquire() as connection:
        await trigger_channel_digest(connection, channel, max_attempts=3)
    assert await make_worker(db, database_url).run_once()
    channel_id = global_id(CHANNEL, channel)
    nodes = (await gql(db, CONVERSATIONS, filter={"channelId": channel_id}))["conversations"][
        "nodes"
    ]
    nfs = next(n for n in nodes if n["rootMessage"]["messageId"] == "m0")
    assert nfs["messageCount"] == 4 and "fay" in nfs["participants"]
    listed = (
        await gql(db, MESSAGES, filter={"channelId": channel_id, "conversationId": nfs["id"]})
    )["messages"]["nodes"]
    assert [m["messageId"] for m in listed] == ["m0", "b1", "m2", "m4"]  # time order
    assert next(m for m in listed if m["messageId"] == "b1")["parent"] == {"messageId": "m0"}
