"""The channel an import names after its file when neither the export nor the caller names one:
the name a person would pick, without the extension and the `.raw`/`.txt`/`.log` before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.importers.ingest import default_channel_name


@pytest.mark.parametrize(
    ("file_name", "channel"),
    [
        ("2010-08-17_18.raw.txt", "2010-08-17_18"),
        ("channel-two.dev.raw.txt", "channel-two.dev"),
        ("ubuntu.LOG", "ubuntu"),
        ("irc.log.1", "irc"),
        ("manual_docker.txt", "manual_docker"),
        ("general.csv", "general"),
        ("release.notes.csv", "release.notes"),
        (".txt", ".txt"),  # nothing but a suffix: kept rather than empty
    ],
)
def test_a_file_names_its_channel_without_its_suffixes(
    tmp_path: Path, file_name: str, channel: str
) -> None:
    path = tmp_path / file_name
    path.write_text("[09:00] <ana> hi\n", encoding="utf-8")
    assert default_channel_name(path) == channel


def test_a_folder_names_its_channel_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "team.export.txt"
    folder.mkdir()
    assert default_channel_name(folder) == "team.export.txt"
