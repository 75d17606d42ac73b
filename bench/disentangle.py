"""Disentanglement speed: messages per second of the link model and of a baseline heuristic
(its peer in the same run) over the Ubuntu IRC dev split, on one core.

    .venv/bin/python bench/disentangle.py [--quick] [--repeats 5] [--data ../shared/data]

Every dev log is linked whole (context lines and system notices included, as the evaluator
does), `--repeats` times per system. Two figures per system: `msgs_per_cpu_s`, lines / the
best run's CPU seconds of this process (what one core does, whatever else the machine runs:
the shared 2-core machine is often oversubscribed), and `msgs_per_s`, lines / the best run's
wall seconds. `--quick` links one log once (the CI smoke size). Target: the model at >= 5,000
messages per CPU second. The Lowe et al. heuristic is the peer: it reads the channel with the
same state (names, recent speakers) and no scoring, so `scoring_share` says how much of the
model's time is making and scoring candidates.
Prints `setup`, one `run` line per system and a `summary`; exit 2 when the data is absent.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from bench._support import REPO, emit, machine_details, spread
from runner.conversations.disentangle import link
from runner.conversations.disentangle.baselines import lowe_links, previous_links
from runner.conversations.disentangle.corpus import read_split
from runner.conversations.disentangle.model import default_model

TARGET_MSGS_PER_S = 5_000
SYSTEMS = (("model", link), ("lowe", lowe_links), ("previous", previous_links))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one log, once")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()
    logs = read_split(args.data, "dev")
    if not logs:
        print(f"bench/disentangle.py: no dev logs under {args.data}", file=sys.stderr)
        return 2
    if args.quick:
        logs, args.repeats = logs[:1], 1
    lines = sum(len(log.messages) for log in logs)
    default_model()  # read the weights before timing
    emit(
        "disentangle",
        kind="setup",
        logs=len(logs),
        messages=lines,
        repeats=args.repeats,
        **machine_details(),
    )
    rates: dict[str, float] = {}
    for name, linker in SYSTEMS:
        wall, cpu = [], []
        for _ in range(args.repeats):
            started, started_cpu = time.perf_counter(), time.process_time()
            for log in logs:
                linker(log.messages)
            wall.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        wall_spread, cpu_spread = spread(wall), spread(cpu)
        rates[name] = lines / max(cpu_spread["best"], 1e-9)
        emit(
            "disentangle",
            kind="run",
            peer=name,
            messages=lines,
            cpu_seconds=cpu_spread,
            wall_seconds=wall_spread,
            msgs_per_cpu_s=round(rates[name]),
            msgs_per_s=round(lines / max(wall_spread["best"], 1e-9)),
        )
    emit(
        "disentangle",
        kind="summary",
        model_msgs_per_cpu_s=round(rates["model"]),
        lowe_msgs_per_cpu_s=round(rates["lowe"]),
        scoring_share=round(1 - rates["model"] / rates["lowe"], 3),
        target_msgs_per_s=TARGET_MSGS_PER_S,
        target_rate_met=rates["model"] >= TARGET_MSGS_PER_S,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
