"""Select candidate state changes for labelling: the messages of at most 200 characters that
match a cue word of docs/channel-memory/state-changes.json's `selection`, sampled per cue with
a fixed seed, printed as JSON lines (path, message id, author, cue, text) for a person to read.

    .venv/bin/python scripts/select_state_changes.py --per-cue 6 \\
        chat/ubuntu_irc_disentanglement/dev/2004-11-15_03.raw.txt ...

Paths are relative to ../shared/data; message ids are the importer's (the ones
scripts/measure_channel_memory.py --labels resolves). A message is sampled under its first cue
in the list order only, so no message is picked twice. The cue list is deliberately broad: the
false friends it catches ("Reading package lists... Done", "when you're done") are what the
labels test the rules against.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runner.importers.detect import iter_records
from runner.importers.irc import file_date
from runner.importers.records import ParsedMessage

DATA = REPO.parent / "shared" / "data"
MAX_CHARS = 200
SHORT_CHARS = 40
SHORT_CUES = {"done", "fixed", "... done"}

# Most specific first: a message is filed under the first cue it matches.
CUES: tuple[tuple[str, str], ...] = (
    ("scratch that", r"\bscratch that\b"),
    ("figured it out", r"\bfigured (it|that|this) out\b"),
    ("works now", r"\bworks? now\b"),
    ("found it", r"\bfound (it|that|this)\b"),
    ("never mind", r"\bnever ?mind\b"),
    ("nvm", r"\bnvm\b"),
    ("solved", r"\bsolved\b"),
    ("instead of", r"\binstead of\b"),
    ("switching to", r"\bswitch(ing|ed)? to\b"),
    ("reverted", r"\brevert(ed|ing)?\b"),
    ("merged", r"\bmerged\b"),
    ("fixed", r"\bfixed\b"),
    ("have done", r"\b(have|has|i've|ive) done\b"),
    ("done for/with", r"\bdone (for|with)\b"),
    ("... done", r"\.\.\.? ?done\b"),
    ("done", r"\bdone\b"),
)


def candidates(path: str) -> list[dict[str, str]]:
    """Every message of `path` that matches a cue, with the first cue it matches."""
    file = DATA / path
    found: list[dict[str, str]] = []
    for record in iter_records(file, base_date=file_date(file)):
        if not isinstance(record, ParsedMessage) or len(record.text) > MAX_CHARS:
            continue
        for cue, pattern in CUES:
            if re.search(pattern, record.text, re.IGNORECASE):
                found.append(
                    {
                        "path": path,
                        "message_id": record.external_id,
                        "author": record.author,
                        "cue": cue,
                        "text": record.text,
                    }
                )
                break
    return found


def select(paths: list[str], per_cue: int, seed: int) -> list[dict[str, str]]:
    """Every short done/fixed message (the bare completion reports, and their false friends, are
    what a sample per cue would mostly miss among the long ones), then up to `per_cue` more
    candidates per cue, drawn with `seed` from all the paths together."""
    pool: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for candidate in (c for path in paths for c in candidates(path)):
        # channel-two's pilot-dev file repeats the dev file's messages: each counts once.
        if (candidate["message_id"], candidate["text"]) not in seen:
            seen.add((candidate["message_id"], candidate["text"]))
            pool.append(candidate)
    chosen = [c for c in pool if c["cue"] in SHORT_CUES and len(c["text"]) <= SHORT_CHARS]
    rest = [c for c in pool if c not in chosen]
    rng = random.Random(seed)
    for cue, _ in CUES:
        mine = [c for c in rest if c["cue"] == cue]
        chosen.extend(rng.sample(mine, min(per_cue, len(mine))))
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("paths", nargs="+", help="logs, relative to ../shared/data")
    parser.add_argument("--per-cue", type=int, default=6, help="candidates drawn per cue")
    parser.add_argument("--seed", type=int, default=20261129, help="the sampling seed")
    args = parser.parse_args()
    for candidate in select(args.paths, args.per_cue, args.seed):
        print(json.dumps(candidate, ensure_ascii=False))


if __name__ == "__main__":
    main()
