"""QMSum meeting transcripts: `{"topic_list": [...], ..., "meeting_transcripts": [...]}`.

Each item of `meeting_transcripts` is one speaker turn, `{"speaker": "...", "content": "..."}`,
and becomes one message (author: the speaker, text: the content, kept as written, transcriber
marks such as `{vocalsound}` included). The other top-level keys (topics, queries and their
reference summaries) are not messages and are not read.

The transcript carries no times and no ids, so both are made up, in file order:

- Timestamps are synthesized: turn n (from 0) is at `TURN_SECONDS * n` seconds after midnight
  UTC of `ParseOptions.base_date` (default `DEFAULT_BASE_DATE`). They only keep the turns in
  order; they are not when anything was said.
- Ids are content-derived (`StableIds`, prefix `qmsum-`): a hash of speaker, synthesized
  timestamp and text. Re-importing the same file gives the same ids; since the timestamp
  follows the turn's position, inserting a turn earlier in the file changes the later ids.

Streamed with ijson like the Discord JSON export, so a file is never in memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from runner.importers.inputs import open_regular
from runner.importers.jsonstream import BadItem, JsonStreamError, iter_items
from runner.importers.records import (
    ParseOptions,
    ParseStats,
    Record,
    RecordError,
    StableIds,
    message_from_fields,
)

TRANSCRIPT_KEY = "meeting_transcripts"
# The keys a QMSum file is made of; detection looks for one of them as the first key.
QMSUM_KEYS = ("topic_list", "general_query_list", "specific_query_list", TRANSCRIPT_KEY)
TURN_SECONDS = 10
DEFAULT_BASE_DATE = date(2000, 1, 1)


def parse_qmsum(path: Path, options: ParseOptions, stats: ParseStats) -> Iterator[Record]:
    start = datetime.combine(options.base_date or DEFAULT_BASE_DATE, datetime.min.time(), UTC)
    ids = StableIds("qmsum-")
    number = 0
    with open_regular(path) as raw:
        for item in iter_items(raw, f"{TRANSCRIPT_KEY}.item"):
            if isinstance(item, JsonStreamError):
                yield RecordError(f"turn {number + 1}", item.reason("turns"))
                return
            number += 1
            location = f"turn {number}"
            if isinstance(item, BadItem):
                yield RecordError(location, item.reason)
                continue
            if not isinstance(item, dict):
                yield RecordError(location, f"expected a turn object, got {type(item).__name__}")
                continue
            yield message_from_fields(
                location=location,
                external_id=None,
                author=item.get("speaker"),
                ts=start + timedelta(seconds=TURN_SECONDS * (number - 1)),
                text=item.get("content"),
                max_message_chars=options.max_message_chars,
                synthesized_id=ids,
            )
    if number == 0:
        yield RecordError(
            "file", f'no turns in a top-level "{TRANSCRIPT_KEY}" list: nothing was read'
        )
