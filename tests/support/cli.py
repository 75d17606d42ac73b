"""`digestd` run in this process, through `server.cli.main` as the console script calls it, with
the settings a child process would get (DATABASE_URL, DIGESTD_HOME, the offline extractor) and
its stdout and stderr captured: a command costs its own work, not a fresh interpreter's imports.
What `main` changes process-wide (the settings cache, the root logger, SIGTERM) is put back."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from server.cli import main
from server.settings import get_settings

_SETTINGS_PREFIXES = ("DATABASE_URL", "DIGESTD_", "DIGEST_")


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(database_url: str, home: Path, *args: str) -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    sigterm = signal.getsignal(signal.SIGTERM)
    with pytest.MonkeyPatch.context() as patch:
        for name in os.environ:
            if name.upper().startswith(_SETTINGS_PREFIXES):
                patch.delenv(name)
        patch.setenv("DATABASE_URL", database_url)
        patch.setenv("DIGESTD_HOME", str(home))
        patch.setenv("DIGEST_EXTRACTOR", "offline")
        get_settings.cache_clear()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
        finally:
            get_settings.cache_clear()
            signal.signal(signal.SIGTERM, sigterm)
            for handler in list(root.handlers):
                root.removeHandler(handler)
            for handler in handlers:
                root.addHandler(handler)
            root.setLevel(level)
    return CliResult(code, out.getvalue(), err.getvalue())
