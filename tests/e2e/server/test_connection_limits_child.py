"""The connection limit read from RLIMIT_NOFILE in a real child process under a lowered descriptor limit."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import REPO_ROOT


def test_the_connection_limit_follows_the_descriptor_limit() -> None:
    script = (
        "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300)); "
        "from server.settings import Settings; "
        "from server.connection_limits import connection_limit, websocket_limit; "
        "s = Settings(database_url='postgresql://unused', digestd_db_pool_size=20); "
        "print(connection_limit(s), websocket_limit(s))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.split() == ["216", "108"]  # 300 - 20 pool - 64 reserved; half of it
