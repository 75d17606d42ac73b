"""`digestd digest --since/--until` as a user runs it (a real process, the test Postgres): exactly the range is digested, and a backwards or unreadable range is refused."""

from __future__ import annotations

import uuid
from pathlib import Path


def test_cli_digest_since_until_reads_exactly_the_range(database_url: str, tmp_path: Path) -> None:
    from tests.support.paths import SAMPLE
    from tests.support.processes import digestd

    channel = f"cli-{uuid.uuid4().hex[:8]}"
    assert (
        digestd(database_url, tmp_path, "import", str(SAMPLE), "--channel", channel).returncode == 0
    )
    window = ("--since", "2025-03-10T09:00:00Z", "--until", "2025-03-10T10:05:00+01:00")
    caught_up = digestd(database_url, tmp_path, "digest", channel, "--wait", *window)
    assert caught_up.returncode == 0, caught_up.stderr
    assert "job " in caught_up.stdout and ": 2 messages" in caught_up.stdout  # m003, m004
    # Coverage untouched: the coverage digest still reads all 70.
    full = digestd(database_url, tmp_path, "digest", channel, "--wait")
    assert ": 70 messages" in full.stdout, full.stdout[-500:]
    backwards = digestd(
        database_url, tmp_path, "digest", channel, "--since", "2025-03-11", "--until", "2025-03-10"
    )
    assert backwards.returncode == 2
    assert backwards.stderr.strip() == "digestd digest: --since must be before --until"
    garbage = digestd(database_url, tmp_path, "digest", channel, "--since", "tuesday")
    assert garbage.returncode == 2 and "Traceback" not in garbage.stderr
