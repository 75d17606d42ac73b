"""A real channel digested offline, read through GraphQL: the overview tells its important
conversations (asked, answered), never noise, and every told sentence is cited."""

from __future__ import annotations

import asyncpg

from runner.extract.offline.importance import is_noise
from runner.importers.ingest import import_path
from schema.types.ids import DIGEST, global_id
from tests.support.digests import digest_once
from tests.support.paths import shared_data
from tests.support.schema import gql

DIGEST_PROSE = """query($id: ID!) { digest(id: $id) { title signalQuality { level reason }
    overviewSentences { text citations { messageId quote } }
    highlightSentences { text citations { messageId quote } } } }"""


async def test_a_real_gitter_room_is_told_by_its_important_conversations(
    db: asyncpg.Pool, database_url: str
) -> None:
    path = shared_data("chat/gitter/manual_docker.txt")
    report = await import_path(db, path, channel="docker-importance")
    channel = next(iter(report.channels.values()))
    done = await digest_once(db, database_url, channel, chunk_tokens=1500)
    assert done.status == "succeeded" and done.digest_id is not None
    digest = (await gql(db, DIGEST_PROSE, id=global_id(DIGEST, done.digest_id)))["digest"]
    told = [*digest["overviewSentences"], *digest["highlightSentences"]]
    assert len(digest["overviewSentences"]) >= 6
    assert all(sentence["citations"] for sentence in told)
    # Nothing told rests on a greeting, thanks, goodbye, meal or joke.
    quotes = [c["quote"] for sentence in told for c in sentence["citations"]]
    assert not [q for q in quotes if is_noise(q)]
    texts = [sentence["text"] for sentence in digest["overviewSentences"]]
    # Conversations first: what was asked and what was answered, then the count of the rest.
    answers = [text.split(" answered: ", 1)[1] for text in texts if " answered: " in text]
    assert answers
    # An answer told is words, never only a link ("you mean this? <link>").
    assert not [a for a in answers if len(a.replace("[<-LINK->]", "").split()) < 4]
    assert any(" other conversations, among them: " in text for text in texts)
    # A decision told is one the room settled, never a question.
    assert not [t for t in texts if t.startswith("Decided:") and t.rstrip().endswith("?")]
    assert "more conversations" in digest["title"]
