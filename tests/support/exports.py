"""Exported HTML read back as a browser's parser sees it: its elements, their attributes and its
visible text; an export whose every stored text is hostile markup; and a real channel digested
and reported on, to export."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser

import asyncpg

from db.jobs import job_by_id
from runner.exports.model import (
    ExportDocument,
    Footnote,
    Item,
    ItemGroup,
    Quote,
    Section,
    Sentence,
)
from runner.importers.ingest import import_path
from runner.triggers import trigger_report
from tests.support.digests import digest_once, make_worker
from tests.support.paths import shared_data

# What a chat message may hold to try to become markup in a Markdown or HTML renderer.
HOSTILE = (
    "<script>alert(1)</script> # heading [^1] [click](javascript:alert(2)) "
    '<img src=x onerror="alert(3)"> &amp; "quoted" \x1b[31m'
)


@dataclass
class ParsedPage(HTMLParser):
    """Every start tag with its attributes, and the text outside tags, of an HTML page."""

    tags: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]

    @property
    def text(self) -> str:
        return "".join(self.texts)


def parse_page(page: str) -> ParsedPage:
    parsed = ParsedPage()
    parsed.feed(page)
    parsed.close()
    return parsed


def hostile_digest() -> ExportDocument:
    """A digest whose title, channel, sentences, items, owners, quotes and authors are all
    `HOSTILE`, with two footnotes (the first cited twice)."""
    at = datetime(2024, 5, 1, 10, 2, tzinfo=UTC)
    return ExportDocument(
        kind="digest",
        id="RGlnZXN0OjE=",
        row_id=1,
        title=HOSTILE,
        created_at=at,
        facts=(("Channel", HOSTILE), ("Messages", "3")),
        sections=(
            Section("overview", None, (Sentence(HOSTILE, (1,)), Sentence("Plain words.", (2,)))),
            Section("highlights", "Highlights", (Sentence(HOSTILE, (1, 2)),), bullets=True),
        ),
        item_groups=(
            ItemGroup("decisions", "Decisions", (Item(HOSTILE, message_ids=(HOSTILE,)),)),
            ItemGroup("actionItems", "Action items", (Item(HOSTILE, owner=HOSTILE),)),
            ItemGroup(
                "links",
                "Links",
                (
                    Item("javascript:alert(4)", url="javascript:alert(4)", detail=HOSTILE),
                    Item("https://example.org/a?b=1&c=2", url="https://example.org/a?b=1&c=2"),
                ),
            ),
            ItemGroup("topics", "Topics", ()),
        ),
        footnotes=(
            Footnote(
                1,
                "message",
                (Quote(HOSTILE),),
                author=HOSTILE,
                at=at,
                channel=HOSTILE,
                message_id="m1",
            ),
            Footnote(
                2,
                "message",
                (Quote("the staging deploy passed"),),
                author="bob",
                at=at,
                channel="ops",
                message_id="m2",
            ),
        ),  # fmt: skip
        fields={"channel": HOSTILE},
    )


async def digested_docker_room(pool: asyncpg.Pool, database_url: str) -> tuple[int, int]:
    """The Gitter docker room of ../shared/data imported and digested offline (skipped when
    the data is absent): (channel, digest) row ids."""
    imported = await import_path(
        pool, shared_data("chat/gitter/manual_docker.txt"), channel="docker"
    )
    channel = next(iter(imported.channels.values()))
    done = await digest_once(pool, database_url, channel, chunk_tokens=1500)
    assert done.status in {"succeeded", "partial"} and done.digest_id is not None, done
    return channel, done.digest_id


async def report_on(pool: asyncpg.Pool, database_url: str, channel: int, question: str) -> int:
    """A report written offline on the channel: its row id."""
    async with pool.acquire() as connection:
        job, _ = await trigger_report(
            connection, question, channel_ids=[channel], document_ids=[], max_attempts=3
        )
    assert await make_worker(pool, database_url).run_once()
    async with pool.acquire() as connection:
        done = await job_by_id(connection, job.id)
    assert done is not None and done.report_id is not None, done
    return done.report_id
