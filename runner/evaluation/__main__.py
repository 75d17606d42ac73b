"""`python -m runner.evaluation GOLD_DIR ...`: the `digestd eval` command without server/cli.py."""

from __future__ import annotations

import argparse
import sys

from runner.evaluation.cli import add_eval_parser
from server.settings import get_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.evaluation")
    commands = parser.add_subparsers(dest="command")
    add_eval_parser(commands)
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    return int(args.handler(args, get_settings()))


if __name__ == "__main__":
    sys.exit(main())
