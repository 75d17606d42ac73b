"""Summaries of a py-spy `--format raw` profile (collapsed stacks) for bench/api.py: where the
GraphQL server's CPU goes, by package of the innermost frame (self time) and by phase of a
GraphQL request (inclusive time), plus the hottest frames."""

from __future__ import annotations

from collections import Counter

# Self time by the package of the innermost frame; the first substring that matches wins.
# py-spy shortens paths to what follows site-packages (or the working directory), so frames
# read "(graphql/validation/validate.py:60)" and "(db/pages.py:34)".
PACKAGES: tuple[tuple[str, str], ...] = (
    ("(strawberry/", "strawberry"),
    ("(graphql/", "graphql-core"),
    ("(asyncpg/", "asyncpg"),
    ("(starlette/", "starlette"),
    ("(uvicorn/", "uvicorn"),
    ("(h11/", "h11"),
    ("(asyncio/", "asyncio"),
    ("(json/", "json"),
    ("(schema/", "digestd"),
    ("(db/", "digestd"),
    ("(server/", "digestd"),
    ("(<string>:", "generated code (<string>)"),
)

# Inclusive time of the phases of one GraphQL request: a stack counts for every phase whose
# marker appears in it.
PHASES: tuple[tuple[str, str], ...] = (
    ("parse", "graphql/language/parser.py"),
    ("validate", "graphql/validation/validate.py"),
    ("query_depth_limit", "strawberry/extensions/query_depth_limiter.py"),
    ("execute_and_complete", "graphql/execution/"),
    ("dataloader_dispatch", "strawberry/dataloader.py"),
    ("context_and_loaders", "schema/context.py"),
    ("keyset_cursor_encode", "KeysetCursor.encode"),
    ("asyncpg", "(asyncpg/"),
    ("uvicorn_h11", "(h11/"),
)


def _frames(stack: str) -> list[str]:
    return [frame for frame in stack.split(";") if frame]


def profile_summary(raw: str, top: int = 15) -> dict[str, object]:
    """Shares (in %) of samples: by package (self), by phase (inclusive), hottest self frames."""
    total = 0
    by_package: Counter[str] = Counter()
    by_phase: Counter[str] = Counter()
    by_frame: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = _frames(stack)
        if not frames:
            continue
        total += count
        leaf = frames[-1]
        by_frame[leaf] += count
        by_package[next((name for marker, name in PACKAGES if marker in leaf), "other")] += count
        for phase, marker in PHASES:
            if marker in stack:
                by_phase[phase] += count

    def share(counter: Counter[str]) -> dict[str, float]:
        return {key: round(100 * value / total, 1) for key, value in counter.most_common()}

    return {
        "samples": total,
        "self_by_package_pct": share(by_package) if total else {},
        "inclusive_by_phase_pct": share(by_phase) if total else {},
        "hottest_self_frames_pct": {
            frame: round(100 * count / total, 1) for frame, count in by_frame.most_common(top)
        }
        if total
        else {},
    }
