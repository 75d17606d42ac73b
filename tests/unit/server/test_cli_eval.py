"""`digestd eval` end to end: the sample gold file through the real pipeline, as a table and as
JSON; real-data windows skipped with a reason when the data is absent."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from server.cli_eval import add_eval_parser, default_data_dir
from server.settings import Settings
from tests.support.paths import REPO_ROOT, shared_data

GOLD_DIR = REPO_ROOT / "docs" / "gold-set"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="digestd")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


@pytest.fixture
def eval_settings(tmp_path: Path) -> Settings:
    return Settings(digestd_home=tmp_path / "home", digest_extractor="offline")


@pytest.fixture
def sample_gold_dir(tmp_path: Path) -> Path:
    """A gold folder inside this checkout's tree with only the sample file and one real window,
    so `root: repo` resolves and the real window needs --data."""
    folder = tmp_path / "gold"
    folder.mkdir()
    shutil.copy(GOLD_DIR / "sample_team_platform.json", folder)
    shutil.copy(GOLD_DIR / "ubuntu_irc_2010_08_17.json", folder)
    return folder


def test_parser_registers_eval_with_its_options() -> None:
    args = parse(["eval", "docs/gold-set", "--data", "/d", "--extractor", "offline", "--json"])
    assert (args.gold_dir, args.data, args.extractor) == ("docs/gold-set", "/d", "offline")
    assert args.json is True
    assert callable(args.handler)
    assert parse(["eval", "g"]).extractor == "offline" and parse(["eval", "g"]).data is None
    with pytest.raises(SystemExit):
        parse(["eval", "g", "--extractor", "gpt"])


def test_default_data_dir_is_shared_data_beside_the_checkout() -> None:
    assert default_data_dir(GOLD_DIR) == REPO_ROOT.parent / "shared" / "data"


def run(argv: list[str], settings: Settings, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.chdir(REPO_ROOT)  # root: repo paths resolve against the checkout from the cwd
    args = parse(argv)
    return int(args.handler(args, settings))


def test_sample_prints_tables_and_skips_absent_data(
    sample_gold_dir: Path,
    eval_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    code = run(
        ["eval", str(sample_gold_dir), "--data", str(tmp_path / "nowhere")],
        eval_settings,
        monkeypatch,
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert "is absent: real-data windows are skipped" in err
    assert "skipped ubuntu-irc-2010-08-17-first-100: no data directory given" in err
    for part in ("per field", "per window", "grounding", "leave-one-source-out"):
        assert f"Chat gold set: {part}" in out
    assert "sample-team-platform" in out and "overall" in out
    assert "note: skipped ubuntu-irc-2010-08-17-first-100" in out


def test_json_output_is_valid_and_holds_the_figures(
    sample_gold_dir: Path,
    eval_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    code = run(
        ["eval", str(sample_gold_dir), "--data", str(tmp_path / "nowhere"), "--json"],
        eval_settings,
        monkeypatch,
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    sections = {s["title"]: s for s in document["sections"]}
    fields = {r["field"]: r for r in sections["Chat gold set: per field"]["records"]}
    assert set(fields) == {
        "topics",
        "decisions",
        "action_items",
        "open_questions",
        "links",
        "artifacts",
        "overall",
    }
    overall = fields["overall"]
    assert overall["gold"] == 39  # the sample gold file's item count
    assert 0 < overall["matched"] <= overall["gold"]
    assert overall["P"] == pytest.approx(overall["matched"] / overall["extracted"], abs=1e-4)
    grounding = sections["Chat gold set: grounding"]["records"][-1]
    assert grounding["window"] == "all" and grounding["verbatim"] == 1.0
    [window] = document["chat"]["windows"]
    assert window["name"] == "sample-team-platform" and "missed" in window


def test_bad_gold_dir_is_exit_2(
    eval_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    assert run(["eval", str(tmp_path)], eval_settings, monkeypatch) == 2
    assert "no *.json gold file" in capsys.readouterr().err


def test_llm_without_endpoint_is_a_configuration_error(
    eval_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = eval_settings.model_copy(update={"digest_llm_base_url": None})
    assert run(["eval", str(GOLD_DIR), "--extractor", "llm"], settings, monkeypatch) == 2
    assert "DIGEST_LLM_BASE_URL" in capsys.readouterr().err


def test_whole_gold_set_with_real_data(
    eval_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = shared_data("chat").parent
    # No database here: the disentanglement rows through the product (import, digest, API) are
    # tests/integration/runner/evaluation's; the model's rows still run.
    monkeypatch.setattr("server.cli_eval.SECTION_ARGUMENTS", {})
    code = run(["eval", str(GOLD_DIR), "--data", str(data), "--json"], eval_settings, monkeypatch)
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert len(document["chat"]["windows"]) >= 4 and document["chat"]["skipped"] == []
    grounding = next(s for s in document["sections"] if s["title"] == "Chat gold set: grounding")
    for record in grounding["records"]:
        # Every stored pointer resolves verbatim; a window that stored none has no share ("-").
        assert record["verbatim"] == (1.0 if record["pointers"] else "-")
    assert grounding["records"][-1]["pointers"] > 0
    loso = next(s for s in document["sections"] if "leave-one-source-out" in s["title"])
    rows = {(r["source"], r["kind"]): r for r in loso["records"]}
    sources = {source for source, _ in rows} - {"all sources", "real-data sources"}
    assert {"sample", "ubuntu", "gitter"} <= sources
    for source in sources:
        # Rule-based fields are not trained: their held-out figure is the in-sample one.
        assert rows[(source, "links")]["filter out"] == "= in-sample"
        decisions = rows[(source, "decisions")]
        assert decisions["shipped mode"] in ("rules", "filter", "propose")
    overall = rows[("all sources", "overall")]
    per_field = next(s for s in document["sections"] if s["title"] == "Chat gold set: per field")
    shipped_overall = next(r for r in per_field["records"] if r["field"] == "overall")
    # The shipped weights were fitted on this gold set: the product's figure is the in-sample one.
    assert overall["shipped in"] == shipped_overall["F1"]
