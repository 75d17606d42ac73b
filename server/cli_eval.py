"""`digestd eval GOLD_DIR [--data DIR] [--extractor offline|llm] [--json]`.

server/cli.py registers it with `add_eval_parser(commands)`; the handler gets the parsed args
and the process Settings, like every other command. The wiring lives in server/ (it needs the
settings and the extractor factory); runner/evaluation holds the evaluation itself and imports
nothing from server/. Exit status: 0 when every figure was
computed and every stored pointer resolved verbatim, 1 when a pointer did not resolve or an
optional section failed, 2 for a bad gold directory or configuration.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.evaluation.tables import EvalSection, render_table, section_to_dict

if TYPE_CHECKING:
    import asyncpg

    from runner.core.extractor import Extractor
    from server.settings import Settings

# Sections another module provides, run when that module is importable: (module, function).
OPTIONAL_SECTIONS = (
    ("runner.evaluation.evidence", "evaluate_evidence"),
    ("runner.evaluation.html_canonical", "evaluate_html"),
    ("runner.evaluation.report_citations", "evaluate_reports"),
    ("runner.evaluation.disentanglement", "evaluate_disentanglement"),
)


# A channel's messages and their parents, as a client reads them (page by page).
MESSAGE_PARENTS = """
query ($channel: ID!, $after: String) {
  messages(filter: {channelId: $channel}, first: 100, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { messageId author parent { messageId } }
  }
}
"""


async def api_message_parents(
    pool: asyncpg.Pool, channel_row: int
) -> list[tuple[str, str, str | None]]:
    """Every message of a channel as (external id, author, its parent's external id or None),
    read through the GraphQL API's `Message.parent`: what the disentanglement section scores
    as the product's threading."""
    from schema import build_schema
    from schema.context import ApiConfig, Context, Role
    from schema.types.ids import CHANNEL, global_id

    schema = build_schema()
    context = Context(pool=pool, role=Role.READER, config=ApiConfig())
    found: list[tuple[str, str, str | None]] = []
    after = None
    while True:
        result = await schema.execute(
            MESSAGE_PARENTS,
            variable_values={"channel": global_id(CHANNEL, channel_row), "after": after},
            context_value=context,
        )
        if result.errors or result.data is None:
            raise RuntimeError(f"the API refused the messages query: {result.errors}")
        page = result.data["messages"]
        for node in page["nodes"]:
            parent = node["parent"]
            found.append((node["messageId"], node["author"], parent and parent["messageId"]))
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


# Arguments a section takes beyond the data directory: the disentanglement section reads the
# product's threading through the API, which the evaluator may not import itself.
SECTION_ARGUMENTS: dict[str, dict[str, Any]] = {
    "evaluate_disentanglement": {"read_parents": api_message_parents},
}


def find_repo_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding pyproject.toml."""
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


def default_data_dir(gold_dir: Path) -> Path:
    """../shared/data beside the checkout that holds the gold directory."""
    root = find_repo_root(gold_dir.resolve()) or Path.cwd()
    return root.parent / "shared" / "data"


def make_extractor_factory(settings: Settings, name: str) -> Callable[[], Extractor]:
    # Imported here: server.runtime pulls in the database layer, which the offline path of
    # the evaluator never touches.
    from server.runtime import extractor_factory

    return extractor_factory(settings.model_copy(update={"digest_extractor": name}))


def optional_sections(data_dir: Path) -> tuple[list[EvalSection], bool]:
    """The evidence and HTML sections, when their modules exist; (sections, all_ok)."""
    sections: list[EvalSection] = []
    ok = True
    for module_name, function_name in OPTIONAL_SECTIONS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise  # the module exists but one of its own imports is missing: a real bug
            continue
        function = getattr(module, function_name, None)
        if function is None:
            continue
        try:
            sections.append(function(data_dir, **SECTION_ARGUMENTS.get(function_name, {})))
        except Exception as error:  # noqa: BLE001 - one broken section must not hide the others
            ok = False
            sections.append(
                EvalSection(
                    f"{module_name}.{function_name}",
                    ["error"],
                    [[f"{type(error).__name__}: {error}"]],
                    ["this section failed; the other figures are unaffected"],
                )
            )
    return sections, ok


def loso_of(golds: list[tuple[Path, Any]], roots: Any, options: Any) -> EvalSection:
    """The leave-one-source-out table of the offline extractor's learned item decisions."""
    from runner.evaluation.loso import loso_section, run_loso
    from runner.extract.offline.item_model import default_model

    modes = {kind: model.mode for kind, model in default_model().kinds.items()}
    return loso_section(run_loso(golds, roots, options, modes))


def handler(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here so that every other `digestd` command starts without the evaluator's
    # pipeline and scoring modules (about 0.4 s of imports).
    from runner.evaluation.chat import ChatEvaluation, PipelineOptions, run_chat
    from runner.evaluation.chat_tables import chat_details, chat_sections
    from runner.evaluation.gold import GoldFileError, load_gold_dir
    from runner.evaluation.windows import Roots, WindowMismatch

    gold_dir = Path(args.gold_dir)
    data_dir = Path(args.data) if args.data else default_data_dir(gold_dir)
    repo = find_repo_root(gold_dir.resolve()) or Path.cwd()
    try:
        golds = load_gold_dir(gold_dir)
    except GoldFileError as error:
        print(f"digestd eval: {error}", file=sys.stderr)
        return 2
    try:
        make_extractor = make_extractor_factory(settings, args.extractor)
    except ValueError as error:  # ConfigurationError, e.g. llm without a base URL
        print(f"digestd eval: configuration error: {error}", file=sys.stderr)
        return 2
    options = PipelineOptions(
        chunk_tokens=settings.digestd_chunk_tokens,
        min_overlap=settings.digestd_min_claim_overlap,
        concurrency=settings.digest_llm_concurrency if args.extractor == "llm" else 1,
    )
    roots = Roots(repo=repo, data=data_dir if data_dir.is_dir() else None)
    if roots.data is None:
        print(
            f"digestd eval: {data_dir} is absent: real-data windows are skipped, and so are "
            "the QMSum evidence and report-citation sections and the HTML section",
            file=sys.stderr,
        )
    try:
        evaluation: ChatEvaluation = run_chat(golds, roots, make_extractor, options)
    except WindowMismatch as error:
        print(f"digestd eval: {error}", file=sys.stderr)
        return 2
    for name, reason in evaluation.skipped:
        print(f"digestd eval: skipped {name}: {reason}", file=sys.stderr)
    sections = chat_sections(evaluation, options, args.extractor)
    if args.extractor == "offline" and evaluation.windows:
        sections.append(loso_of(golds, roots, options))
    extra, extra_ok = optional_sections(data_dir) if roots.data is not None else ([], True)
    sections += extra
    if args.json:
        document: dict[str, Any] = {
            "sections": [section_to_dict(section) for section in sections],
            "chat": chat_details(evaluation),
        }
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print("\n\n".join(render_table(section) for section in sections))
    grounded = all(
        w.grounding.pointers_verbatim == w.grounding.pointers_stored for w in evaluation.windows
    )
    return 0 if grounded and extra_ok else 1


def add_eval_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `eval` on the `digestd` subcommands."""
    parser = commands.add_parser(
        "eval",
        help="score digests against a gold set (P/R/F1, grounding)",
        description="Run the real pipeline on every gold window and print P/R/F1 per field, "
        "grounding figures, the leave-one-source-out table of the offline extractor's learned "
        "item decisions and, when available, the evidence and HTML sections.",
    )
    parser.add_argument("gold_dir", metavar="GOLD_DIR", help="directory of gold *.json files")
    parser.add_argument(
        "--data",
        default=None,
        help="shared data directory (default: ../shared/data beside the checkout)",
    )
    parser.add_argument("--extractor", choices=("offline", "llm"), default="offline")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(handler=handler)
