"""Chat export parsers: files in, `ParsedMessage` / `RecordError` records out (no database).

`detect_format(path)` names the format; `iter_records(path)` streams its records. One module per
format (jsonl, discord_json, discord_csv, discord_txt, slack, irc, qmsum); `records` holds the record
types and the single check-and-repair gate every record passes (`message_from_fields`).
"""

from runner.importers.detect import PARSERS, detect_format, iter_records
from runner.importers.records import (
    ParsedMessage,
    ParseStats,
    Record,
    RecordError,
    message_from_fields,
)

__all__ = [
    "PARSERS",
    "ParseStats",
    "ParsedMessage",
    "Record",
    "RecordError",
    "detect_format",
    "iter_records",
    "message_from_fields",
]
