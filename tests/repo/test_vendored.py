"""The vendored chart library is exactly what scripts/vendor_uplot.py fetches: each file under
server/static/uplot/ has its pinned sha256, its license is beside it, its README says so, and
nothing else is in the folder (a hand edit or a stray file fails here, not in a browser)."""

from __future__ import annotations

import hashlib

from scripts.vendor_uplot import FILES, TARGET, readme


def test_each_vendored_file_has_its_pinned_digest() -> None:
    for item in FILES:
        data = (TARGET / item.name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == item.sha256, item.name
    assert b"MIT License" in (TARGET / "LICENSE.uplot").read_bytes()


def test_the_folder_holds_the_pinned_files_and_their_readme_only() -> None:
    on_disk = {path.name for path in TARGET.iterdir()}
    assert on_disk == {item.name for item in FILES} | {"README.md"}
    assert (TARGET / "README.md").read_text(encoding="utf-8") == readme()
