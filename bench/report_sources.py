"""Report sources benchmark: registering a report's citations as sources and writing its
footnotes and `## Sources` list, at 100 and 1,000 citations, against the seed's targets.

    /tmp/venv/bin/python bench/report_sources.py [--quick] [--sizes 100,1000] [--repeats 5]

Setup per size: a synthetic report of that many citations across ten sections, as reports cite:
three in four citations quote a document (each document cited in eight places, eight spans of
one source), one in four a chat message. No database, no model: the code measured is pure.

Measured per size, best of `--repeats` (after one warm-up):
- `register`: `runner.reports.sources.SourceRegistry.register` over every citation (the
  per-report registry: dictionaries by canonical key and span key), against `list_registry`,
  the naive peer that finds a source and its spans by scanning lists; per call, and the dedup look-up (`find_by_key`)
  per call. Targets: register < 100 ms per call, dedup < 10 ms.
- `footnotes`: what the report job does after the audit (`registry()`, `report_json`,
  `report_markdown`: sources, spans, sections citing each, footnotes, the Sources list),
  against `digest_markdown`, the digest's footnoted Markdown of the same sections
  (`runner.grounding.footnotes.footnoted_markdown`: one footnote per source, its first quote
  only, no Sources list). Target: < 1 s per 100 citations.
The `summary` line has each figure, the ratio to its peer and the target flags. `--quick`: one
warm-up and two repeats (seconds in all).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from bench._support import emit, machine_details, spread, utc_now
from runner.grounding.footnotes import FootnotedSentence, Section, footnoted_markdown
from runner.reports.records import report_json
from runner.reports.report import Report, ReportSection, report_markdown
from runner.reports.sources import DocumentSource, MessageSource, ReportSource, SourceRegistry

BENCH_NAME = "report_sources"
TARGET_REGISTER_MS = 100.0
TARGET_DEDUP_MS = 10.0
TARGET_FOOTNOTES_S_PER_100 = 1.0
SPANS_PER_DOCUMENT = 8
SECTIONS = 10
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
_WORDS = (
    "deploy migration rollback approval lead runbook freeze window cache replica worker retry "
    "gateway release config index timeout lease queue schema cursor budget chunk digest"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(14)).capitalize() + "."


def citations_of(count: int, seed: int = 4) -> list[ReportSource]:
    """`count` citations: three in four spans of documents cited in eight places each."""
    rng = random.Random(seed)
    cited: list[ReportSource] = []
    for index in range(count):
        if index % 4 != 3:
            document, span = divmod(len(cited), SPANS_PER_DOCUMENT)
            start = span * 200
            cited.append(
                DocumentSource(
                    str(document + 1),
                    f"handbook-{document + 1}.pdf",
                    f"sha256:{document:064x}",
                    f"page:{span + 1}:char:{start}-{start + 120}",
                    _sentence(rng),
                    f"https://docs.example.org/handbook-{document + 1}.pdf",
                )
            )
        else:
            text = _sentence(rng)
            cited.append(
                MessageSource(
                    "ops",
                    str(index),
                    1,
                    f"user{index % 17}",
                    T0 + timedelta(minutes=index),
                    text,
                    0,
                    len(text),
                    index,
                )
            )
    return cited


def report_of(cited: list[ReportSource]) -> Report:
    """One sentence per citation, spread over `SECTIONS` sections in order."""
    per_section = max(1, -(-len(cited) // SECTIONS))
    sections: list[ReportSection] = []
    for start in range(0, len(cited), per_section):
        sentences = tuple(
            FootnotedSentence(f"Sentence {i} says {source.quote}", (source,))
            for i, source in enumerate(cited[start : start + per_section], start=start)
        )
        sections.append(Section(f"Part {len(sections) + 1}", sentences))
    return Report("q", "Benchmark report", tuple(sections))


class ListRegistry:
    """The naive peer, doing the same work: sources and each one's spans in lists, a key or a
    span found by scanning them."""

    def __init__(self) -> None:
        self._keys: list[str] = []
        self._spans: list[list[str]] = []

    def register(self, source: ReportSource) -> str:
        key = source.key
        if key in self._keys:
            index = self._keys.index(key)
        else:
            index = len(self._keys)
            self._keys.append(key)
            self._spans.append([])
        if source.span_key not in self._spans[index]:
            self._spans[index].append(source.span_key)
        return f"S{index + 1}"

    def find_by_key(self, key: str) -> str | None:
        return f"S{self._keys.index(key) + 1}" if key in self._keys else None


def _best(run: Callable[[], Any], repeats: int) -> float:
    run()  # warm-up
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return float(spread(samples)["best"])


def _register(cited: list[ReportSource], make: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        registry = make()
        for source in cited:
            registry.register(source)
        for source in cited:
            registry.find_by_key(source.key)
        return registry

    return run


def _register_only(cited: list[ReportSource], make: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        registry = make()
        for source in cited:
            registry.register(source)
        return registry

    return run


def _report_footnotes(report: Report) -> Callable[[], Any]:
    def run() -> Any:
        registry = report.registry()
        report_json(report, registry)
        return report_markdown(report, registry)

    return run


def measure(count: int, repeats: int) -> dict[str, Any]:
    cited = citations_of(count)
    report = report_of(cited)
    registry = report.registry()
    sources, spans = len(registry), sum(len(e.spans) for e in registry.entries())
    emit(BENCH_NAME, kind="setup", citations=count, sources=sources, spans=spans)
    figures: dict[str, Any] = {"citations": count, "sources": sources}
    for peer, make in (("registry", SourceRegistry), ("list_registry", ListRegistry)):
        register_s = _best(_register_only(cited, make), repeats)
        both_s = _best(_register(cited, make), repeats)
        register_ms = register_s * 1000 / count
        dedup_ms = max(both_s - register_s, 0.0) * 1000 / count
        emit(
            BENCH_NAME,
            kind="run",
            step="register",
            peer=peer,
            citations=count,
            seconds=round(register_s, 6),
            register_ms_per_call=round(register_ms, 6),
            dedup_ms_per_call=round(dedup_ms, 6),
        )
        figures[f"{peer}_register_ms"] = register_ms
        figures[f"{peer}_dedup_ms"] = dedup_ms
    for peer, run in (
        ("report_markdown", _report_footnotes(report)),
        ("digest_markdown", lambda: footnoted_markdown(report.sections)),
    ):
        seconds = _best(run, repeats)
        per_100 = seconds * 100 / count
        emit(
            BENCH_NAME,
            kind="run",
            step="footnotes",
            peer=peer,
            citations=count,
            seconds=round(seconds, 6),
            seconds_per_100_citations=round(per_100, 6),
        )
        figures[f"{peer}_s_per_100"] = per_100
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two repeats per figure")
    parser.add_argument("--sizes", default="100,1000", help="citations per report, comma-separated")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per figure (5)")
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else 5)
    sizes = [int(size) for size in args.sizes.split(",")]
    emit(BENCH_NAME, kind="setup", started=utc_now(), repeats=repeats, **machine_details())
    for count in sizes:
        f = measure(count, repeats)
        register_ms, dedup_ms = f["registry_register_ms"], f["registry_dedup_ms"]
        per_100 = f["report_markdown_s_per_100"]
        emit(
            BENCH_NAME,
            kind="summary",
            citations=count,
            sources=f["sources"],
            register_ms_per_call=round(register_ms, 6),
            dedup_ms_per_call=round(dedup_ms, 6),
            footnotes_s_per_100_citations=round(per_100, 6),
            register_ratio_to_list=round(
                f["list_registry_register_ms"] / register_ms if register_ms else 0.0, 2
            ),
            footnotes_ratio_to_digest_markdown=round(
                per_100 / f["digest_markdown_s_per_100"] if f["digest_markdown_s_per_100"] else 0.0,
                2,
            ),
            target_register_met=register_ms < TARGET_REGISTER_MS,
            target_dedup_met=dedup_ms < TARGET_DEDUP_MS,
            target_footnotes_met=per_100 < TARGET_FOOTNOTES_S_PER_100,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
