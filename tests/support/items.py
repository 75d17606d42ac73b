"""A channel digested on two days, for the channel item tests and the console's channel page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# (id, author, text, reply_to) of one message
Row = tuple[str, str, str, str | None]

DAY1 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


DAY2 = DAY1 + timedelta(days=1)


DAY1_ROWS: list[Row] = [
    ("q1", "ann", "How do I make the nightly backup script skip the cache directory?", None),
    ("t1", "cid", "I'll update the deploy docs for the new backup flow tomorrow.", None),
    ("d1", "dee", "Let's use restic for the offsite backups.", None),
    ("d2", "bob", "agreed, restic it is", None),
    ("x1", "eve", "the new office printer finally works again", None),
]


DAY2_ROWS: list[Row] = [
    ("a1", "bob", "ann: add --exclude=cache to the rsync line in backup.sh, that skips it", "q1"),
    (
        "t2",
        "cid",
        "deploy docs for the backup flow updated and merged: https://github.com/acme/ops/pull/12",
        None,
    ),
    ("d3", "dee", "We decided to switch to borg instead of restic for the offsite backups.", None),
]
