"""Learn the item decisions of the offline extractor from the gold set.

    .venv/bin/python scripts/train_items.py [--gold docs/gold-set] [--data ../shared/data]
                                            [--out PATH] [--check]

Reads every gold window (docs/gold-set/GUIDELINE.md) whose data is present, makes one example per
message with the runtime's own features (`runner.extract.offline.item_model.message_features`,
labels from `runner.evaluation.item_data`), and fits one logistic model per kind (decisions,
action items, open questions) on all of them: full-batch gradient descent from zero weights, a
fixed number of steps, weights rounded to 4 decimals, so the same gold set gives the same file.

Then it decides, per kind, how the product decides that kind (`item_model.MODES`: the rules
alone, the model filtering the rules' items, or filtering and proposing): it digests every
window with the rules and with each mode of the models fitted without the window's source
(leave-one-source-out, `runner.evaluation.loso`), and keeps the mode with the best held-out F1
on the real-data windows; the rules win ties, so a model decides only where it beats them. The weights and gates go to
runner/extract/offline/item_weights.json. `--check` writes nothing and exits 1 when the file
differs from what this run would write.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.core.offload import set_inline
from runner.evaluation.chat import PipelineOptions
from runner.evaluation.gold import load_gold_dir
from runner.evaluation.item_data import training_examples
from runner.evaluation.loso import choose_modes, evaluate_loso, load_labelled, loso_section
from runner.evaluation.tables import render_table
from runner.evaluation.windows import Roots
from runner.extract.offline.item_model import WEIGHTS_PATH, fit

CHUNK_TOKENS = 6000  # the service's default DIGESTD_CHUNK_TOKENS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gold", default=str(ROOT / "docs" / "gold-set"))
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--out", default=str(WEIGHTS_PATH))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    set_inline(True)  # one process: the figures do not depend on it, the start-up cost does
    data = Path(args.data)
    roots = Roots(repo=ROOT, data=data if data.is_dir() else None)
    loaded = load_labelled(load_gold_dir(Path(args.gold)), roots)
    labelled = [w.labelled for w in loaded]
    sources = sorted({w.source for w in labelled})
    examples = training_examples(labelled, None)
    print(f"{len(labelled)} windows, {len(examples)} messages, sources: {', '.join(sources)}")
    options = PipelineOptions(chunk_tokens=CHUNK_TOKENS)
    evaluation = asyncio.run(evaluate_loso(loaded, options, {}))
    modes = choose_modes(evaluation.windows)
    evaluation.modes = modes
    print(render_table(loso_section(evaluation)))
    about = (
        "item decision weights (one logistic model per kind); made by scripts/train_items.py "
        f"from {len(labelled)} gold windows of docs/gold-set ({', '.join(sources)}); mode: how "
        "the kind is decided (rules / filter / propose), the best held-out mode"
    )
    text = fit(examples, modes).to_json(about)
    out = Path(args.out)
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print("weights file is up to date" if same else f"{out} differs from this run")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}: modes {modes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
