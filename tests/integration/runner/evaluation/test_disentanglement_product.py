"""Disentanglement through the product: a real Ubuntu IRC log imported, digested and read back
through the API gives the parents the model gives on the same messages, and `digestd eval`'s
section prints the product's figure beside the model's (skipped when ../shared/data is absent)."""

from __future__ import annotations

import shutil
from pathlib import Path

import asyncpg

from runner.conversations.disentangle.corpus import CORPUS_DIR, AnnotatedLog, read_raw
from runner.evaluation.disentanglement import PRODUCT, evaluate_disentanglement
from runner.evaluation.disentanglement_product import import_digest_read, spoken_parents
from runner.evaluation.tables import render_table
from server.cli_eval import SECTION_ARGUMENTS, api_message_parents
from tests.support.paths import shared_data

LOG = "2009-03-03_10"  # a dev log (24-hour stamps): 1,000 context lines, 250 annotated


async def test_product_parents_are_the_models_parents(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    source = shared_data(f"{CORPUS_DIR}/dev/{LOG}.raw.txt")
    path = tmp_path / source.name  # its first 400 lines: a small channel, joins and quits too
    path.write_text("\n".join(source.read_text("utf-8").splitlines()[:400]) + "\n", "utf-8")
    log = AnnotatedLog(LOG, read_raw(path), {})
    assert sum(m.system for m in log.messages) >= 5

    through = await import_digest_read(
        db, database_url, log, path, "disentangle-agreement", api_message_parents
    )

    expected = spoken_parents(log.messages)
    assert through == expected
    # Real threading, not every message alone, and nothing answers a system line.
    assert sum(parent is not None for parent in through) > 150
    assert all(parent is None or not log.messages[parent].system for parent in through)


def test_eval_prints_the_product_beside_the_model(tmp_path: Path) -> None:
    source = shared_data(f"{CORPUS_DIR}/dev/{LOG}.raw.txt").parent
    dev = tmp_path / CORPUS_DIR / "dev"
    dev.mkdir(parents=True)
    for suffix in (".raw.txt", ".annotation.txt"):
        shutil.copy(source / f"{LOG}{suffix}", dev)

    section = evaluate_disentanglement(tmp_path, **SECTION_ARGUMENTS["evaluate_disentanglement"])

    records = {row[1]: dict(zip(section.columns, row, strict=True)) for row in section.rows}
    assert list(records) == [
        "link model",
        PRODUCT,
        "previous (baseline)",
        "Lowe et al. 2017 (baseline)",
    ]
    model, product = records["link model"], records[PRODUCT]
    assert isinstance(model["link F1"], float) and isinstance(product["link F1"], float)
    assert product["link F1"] > 0.6
    assert abs(product["link F1"] - model["link F1"]) <= 0.02
    table = render_table(section)
    assert PRODUCT in table and "annotated messages (link F1" in table
