"""Unpacking a Slack export's zip: the bytes inflated are bounded (a small zip of zeros does not
fill the disk), members that would leave the folder are skipped, the export's root is found."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from runner.importers import archive
from runner.importers.archive import is_zip, unpack_slack_zip
from runner.importers.inputs import UnusableInput


def _zip(members: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as written:
        for name, content in members.items():
            written.writestr(name, content)
    buffer.seek(0)
    return buffer


def test_the_inflated_bytes_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1024 * 1024)
    bomb = _zip({"channels.json": b"[]", "general/2020-01-01.json": bytes(3 * 1024 * 1024)})
    assert len(bomb.getvalue()) < 10_000 and is_zip(bomb.getvalue())
    with pytest.raises(UnusableInput, match="bomb.zip unpacks to over 1 MB"):
        unpack_slack_zip(bomb, tmp_path, "bomb.zip")


def test_the_root_is_the_top_or_its_one_folder_and_climbing_members_are_skipped(
    tmp_path: Path,
) -> None:
    nested = _zip({"export/channels.json": b"[]", "export/../../../x.json": b"[]"})
    unpacked = unpack_slack_zip(nested, _made(tmp_path / "a"), "a.zip")
    assert unpacked.root == tmp_path / "a" / "export"
    assert unpacked.skipped == ["export/../../../x.json: a path leading outside the export"]
    assert not (tmp_path.parent / "x.json").exists()
    with pytest.raises(UnusableInput, match="not a Slack export"):
        unpack_slack_zip(_zip({"notes.txt": b"x"}), _made(tmp_path / "b"), "b.zip")
    with pytest.raises(UnusableInput, match="c.zip is not a readable zip file"):
        unpack_slack_zip(io.BytesIO(b"PK\x03\x04 not really"), _made(tmp_path / "c"), "c.zip")


def _made(folder: Path) -> Path:
    folder.mkdir()
    return folder
