"""A person's catch-up across three real channels of ../shared/data (an Ubuntu IRC log, the
Gitter docker room, a Discord export), imported and digested offline through the product, read
through the API: handles of one person (an IRC nick, a Gitter name, a Discord name with its
discriminator and the short name people address them by) linked with `linkHandle`, each in its channel; every entry is cited and every
quote is the cited message's text verbatim; the channel where a question waits on them comes
first; `markRead` moves where a channel's catch-up starts."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from runner.importers.ingest import import_path
from schema.types.ids import CHANNEL, global_id
from tests.support.digests import digest_once
from tests.support.paths import shared_data
from tests.support.schema import gql

FILES = [
    ("chat/ubuntu_irc/2010-08-17_18.raw.txt", "ubuntu"),
    ("chat/gitter/manual_docker.txt", "docker"),
    ("chat/discord/komodo_cc-general_48.csv", "komodo"),
]
# yanick_ asks "Seveas-train, ...hmm... if my memory is mostly free, ..." in the IRC log: an
# open question put to Seveas-train. The other two are active in their rooms; on Discord, siu
# writes as "siu - Chainmakers#3920" and is addressed as "@siu".
HANDLES = {
    "ubuntu": ["Seveas-train"],
    "docker": ["galvesribeiro"],
    "komodo": ["siu - Chainmakers#3920", "@siu"],
}

LINK = """mutation($p: String!, $h: String!, $c: ID) { linkHandle(person: $p, handle: $h, channelId: $c) {
  __typename ... on Person { name handles { handle key channelId } }
  ... on InvalidInputError { message reason } } }"""
CATCH_UP = """query($p: String!, $since: DateTime) { catchUp(person: $p, since: $since) {
  person known handles since truncated channelCount
  channels(first: 100) { channelId channelName since rank score
    counts { questions actionItems mentions decisions total }
    entries(first: 100) { kind text at itemId status owner
      citationCount citations(first: 10) { messageId externalId author at revision charStart charEnd quote } } } } }"""
MESSAGE = """query($id: ID!) { node(id: $id) { ... on Message { messageId author revision
  normalizedText } } }"""
MARK = """mutation($p: String!, $c: ID!, $u: DateTime) { markRead(person: $p, channelId: $c, until: $u) {
  __typename ... on ReadMarker { readUntil person { name } } } }"""


async def test_a_catch_up_across_three_real_channels_is_cited_ranked_and_remembers_reads(
    db: asyncpg.Pool, database_url: str
) -> None:
    channels: dict[str, str] = {}
    for path, name in FILES:
        report = await import_path(db, shared_data(path), channel=name)
        channel = next(iter(report.channels.values()))
        done = await digest_once(db, database_url, channel, chunk_tokens=1500)
        assert done.status in {"succeeded", "partial"}, done
        channels[name] = global_id(CHANNEL, channel)
    for name, handles in HANDLES.items():
        for handle in handles:
            linked = (await gql(db, LINK, p="Pat", h=handle, c=channels[name]))["linkHandle"]
            assert linked["__typename"] == "Person", linked
    keys = {(h["key"], h["channelId"]) for h in linked["handles"]}
    # Pat's own name is a handle everywhere; each linked one only in its channel, folded.
    assert keys == {
        ("pat", None),
        ("seveas-train", channels["ubuntu"]),
        ("galvesribeiro", channels["docker"]),
        ("siu - chainmakers", channels["komodo"]),
        ("siu", channels["komodo"]),
    }
    # A handle names one person per scope.
    taken = (await gql(db, LINK, p="Sam", h="GALVESRIBEIRO", c=channels["docker"]))["linkHandle"]
    assert taken["__typename"] == "InvalidInputError" and taken["reason"] == "handle_taken"

    since = "2000-01-01T00:00:00Z"
    catch_up = (await gql(db, CATCH_UP, p="pat", since=since))["catchUp"]
    assert catch_up["known"] and catch_up["person"] == "Pat" and not catch_up["truncated"]
    sections = {s["channelName"]: s for s in catch_up["channels"]}
    assert set(sections) == {"ubuntu", "docker", "komodo"}, sections.keys()
    assert catch_up["channelCount"] == 3

    # The IRC channel, where yanick_'s question waits on Seveas-train, ranks first.
    first = catch_up["channels"][0]
    assert first["channelName"] == "ubuntu" and first["rank"] == 1
    assert first["counts"]["questions"] >= 1
    question = next(e for e in first["entries"] if e["kind"] == "QUESTION")
    assert question["owner"] == "yanick_" and question["status"] == "OPEN"
    assert question["citations"][0]["quote"].startswith("Seveas-train")
    scores = [s["score"] for s in catch_up["channels"]]
    assert scores == sorted(scores, reverse=True)
    assert sections["docker"]["counts"]["mentions"] >= 1
    assert sections["komodo"]["counts"]["mentions"] >= 1

    # Every entry is cited (a mention by the message naming Pat, not by Pat), and every quote
    # is its message's text at the cited offsets.
    cited = 0
    for section in catch_up["channels"]:
        assert section["counts"]["total"] == len(section["entries"])
        for entry in section["entries"]:
            assert entry["citations"] and len(entry["citations"]) == entry["citationCount"]
            for citation in entry["citations"]:
                message = (await gql(db, MESSAGE, id=citation["messageId"]))["node"]
                text = message["normalizedText"]
                assert text[citation["charStart"] : citation["charEnd"]] == citation["quote"]
                assert citation["quote"] and citation["revision"] == message["revision"]
                assert citation["author"] == message["author"]
                assert citation["externalId"] == message["messageId"]
                if entry["kind"] == "MENTION":
                    own = {h.casefold() for h in HANDLES[section["channelName"]]}
                    assert citation["author"].casefold() not in own
                cited += 1
    assert cited >= 5

    # Read the docker room up to the middle of its mentions: the default start there moves to
    # the marker, and only the later mentions are left; elsewhere the default is 24 hours ago,
    # so these old logs have no mention or decision left, only what still waits on Pat.
    mentions = sorted(e["at"] for e in sections["docker"]["entries"] if e["kind"] == "MENTION")
    middle = mentions[len(mentions) // 2]
    marked = (await gql(db, MARK, p="pat", c=channels["docker"], u=middle))["markRead"]
    assert marked["__typename"] == "ReadMarker" and marked["person"]["name"] == "Pat"
    again = (await gql(db, CATCH_UP, p="Pat"))["catchUp"]
    assert again["since"] is None
    by_name = {s["channelName"]: s for s in again["channels"]}
    docker = by_name["docker"]
    assert datetime.fromisoformat(docker["since"]) == datetime.fromisoformat(middle)
    left = [e["at"] for e in docker["entries"] if e["kind"] == "MENTION"]
    assert left and all(at > middle for at in left)
    assert len(left) == len([at for at in mentions if at > middle])
    assert by_name["ubuntu"]["counts"]["questions"] >= 1
    assert by_name["ubuntu"]["counts"]["mentions"] == 0
    assert again["channels"][0]["channelName"] == "ubuntu"
    # A marker never moves back.
    await gql(db, MARK, p="pat", c=channels["docker"], u=since)
    later = (await gql(db, CATCH_UP, p="Pat"))["catchUp"]["channels"]
    assert next(s for s in later if s["channelName"] == "docker") == docker
