"""Run the real pipeline on every gold window and score it: the chat half of `digestd eval`.

The pipeline is called directly on plain data (no database, no worker, no job): the same
`run_pipeline` the worker uses, so the figures are the service's, without the storage cost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runner.conversations.threads import thread_window
from runner.core.extractor import Extractor
from runner.digests.pipeline import run_pipeline
from runner.evaluation.gold import GoldFile, WindowRoot
from runner.evaluation.matching import TEXT_THRESHOLD
from runner.evaluation.scoring import FieldScore, Grounding, grounding_of, score_fields
from runner.evaluation.windows import (
    Roots,
    WindowMismatch,
    WindowUnavailable,
    check_gold_against_window,
    load_window,
)


@dataclass(frozen=True)
class PipelineOptions:
    """The pipeline knobs the service takes from Settings (chunk size, overlap, concurrency)."""

    chunk_tokens: int
    min_overlap: float = 0.5
    concurrency: int = 1
    threshold: float = TEXT_THRESHOLD


@dataclass
class WindowScore:
    name: str
    gold_path: Path
    real_data: bool  # a window of ../shared/data (not the repo's own sample)
    messages: int
    fields: dict[str, FieldScore]
    grounding: Grounding
    seconds: float
    chunks: int
    failed_chunks: int
    map_rejections: int


@dataclass
class ChatEvaluation:
    windows: list[WindowScore] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (gold name, reason)


async def evaluate_window(
    gold: GoldFile,
    gold_path: Path,
    roots: Roots,
    make_extractor: Callable[[], Extractor],
    options: PipelineOptions,
) -> WindowScore:
    window = load_window(gold, roots)
    problems = check_gold_against_window(gold, window)
    if problems:
        # A broken annotation would score as a miss and look like an extractor fault.
        raise WindowMismatch(f"{gold_path}: " + "; ".join(problems[:5]))
    # Threaded and ordered by conversation, as the worker's channel job does.
    result = await run_pipeline(
        thread_window(window),
        make_extractor(),
        chunk_tokens=options.chunk_tokens,
        min_overlap=options.min_overlap,
        concurrency=options.concurrency,
    )
    texts = {message.message_id: message.normalized_text for message in window.messages}
    return WindowScore(
        name=gold.name,
        gold_path=gold_path,
        real_data=gold.window.root == WindowRoot.DATA,
        messages=len(window.messages),
        fields=score_fields(gold, result.digest, options.threshold),
        grounding=grounding_of(result, texts, options.min_overlap),
        seconds=result.duration_seconds,
        chunks=result.chunk_count,
        # A chunk the offline rules read for a failing model was not read by the extractor
        # under evaluation: it counts as failed here.
        failed_chunks=len(result.failed_chunks) + len(result.fallback_chunks),
        map_rejections=len(result.map_rejections),
    )


async def evaluate_chat(
    golds: list[tuple[Path, GoldFile]],
    roots: Roots,
    make_extractor: Callable[[], Extractor],
    options: PipelineOptions,
) -> ChatEvaluation:
    """Every window in gold-file order; a window whose data is absent is skipped with its
    reason, while a window that does not match its gold file is an error (raised)."""
    evaluation = ChatEvaluation()
    for path, gold in golds:
        try:
            score = await evaluate_window(gold, path, roots, make_extractor, options)
        except WindowUnavailable as reason:
            evaluation.skipped.append((gold.name, str(reason)))
            continue
        evaluation.windows.append(score)
    return evaluation


def run_chat(
    golds: list[tuple[Path, GoldFile]],
    roots: Roots,
    make_extractor: Callable[[], Extractor],
    options: PipelineOptions,
) -> ChatEvaluation:
    return asyncio.run(evaluate_chat(golds, roots, make_extractor, options))
