"""Memory and time of reading a large PDF: digestd's extraction (`ingest_bytes`, the product's
path with its page and character limits) against a peer in the same run, pypdf's plain
`extract_text()` over every page joined, on PDFs made of N copies of a real paper's pages.

    .venv/bin/python bench/pdf_memory.py [--quick] [--copies 1,5,20]

One JSON line per (copies, peer): pages, characters read, seconds, the Python heap's peak
(tracemalloc, which sees pypdf's allocations: it is pure Python) and whether the limits cut the
text; a `summary` line gives digestd's peak over the peer's at the largest size. Past the limits
(500 pages, 500,000 characters; not its 30 s timeout, which tracemalloc's slowdown would
hit first) digestd stops reading, so its peak stays bounded while the
peer's grows with the file. `--quick` runs 1 and 2 copies (the CI smoke size). Exit 2 when the
data is absent.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from pypdf import PdfReader, PdfWriter

from bench._support import emit
from runner.documents.ingest import ingest_bytes
from runner.documents.pdf import PdfLimits

BENCH_NAME = "pdf_memory"
PAPER = _BENCH.parents[1] / "shared" / "data" / "docs" / "pdf" / "acl19irc.pdf"


def repeated_pdf(source: bytes, copies: int) -> bytes:
    """A PDF holding `copies` copies of every page of `source`, in order."""
    writer = PdfWriter()
    for _ in range(copies):
        writer.append(PdfReader(io.BytesIO(source)))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# The product's page and character limits, without its 30 s timeout: tracemalloc slows pure
# Python several times, and the time limit would stop the run before the memory limits do.
LIMITS = PdfLimits(timeout_seconds=3600.0)
CUT_CODES = {"pdf_pages_truncated", "pdf_text_truncated"}


def digestd_read(data: bytes) -> tuple[int, int, bool]:
    document = ingest_bytes(data, "application/pdf", pdf_limits=LIMITS)
    cut = any(warning.code in CUT_CODES for warning in document.warnings)
    return len(document.page_spans or []), len(document.canonical_text), cut


def pypdf_read(data: bytes) -> tuple[int, int, bool]:
    reader = PdfReader(io.BytesIO(data))
    text = "\n\n".join(page.extract_text() or "" for page in reader.pages)
    return len(reader.pages), len(text), False


PEERS: dict[str, Callable[[bytes], tuple[int, int, bool]]] = {
    "digestd": digestd_read,
    "pypdf_plain": pypdf_read,
}


def measure(read: Callable[[bytes], tuple[int, int, bool]], data: bytes) -> dict[str, object]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    started = time.perf_counter()
    pages, chars, cut = read(data)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "pages_read": pages,
        "chars": chars,
        "limits_cut": cut,
        "seconds": round(seconds, 3),
        "peak_mb": round(peak / 2**20, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 2 copies only")
    parser.add_argument("--copies", default="1,5,20", help="comma-separated copy counts")
    args = parser.parse_args()
    if not PAPER.is_file():
        print(f"no data at {PAPER}: ../shared/data lives beside the checkout", file=sys.stderr)
        return 2
    sizes = [1, 2] if args.quick else [int(n) for n in args.copies.split(",") if n.strip()]
    source = PAPER.read_bytes()
    emit(BENCH_NAME, kind="setup", source=PAPER.name, copies=sizes)
    last: dict[str, dict[str, object]] = {}
    for copies in sizes:
        data = repeated_pdf(source, copies)
        for peer, read in PEERS.items():
            row = measure(read, data)
            last[peer] = row
            emit(BENCH_NAME, kind="run", peer=peer, copies=copies, bytes=len(data), **row)
    ours, theirs = last["digestd"]["peak_mb"], last["pypdf_plain"]["peak_mb"]
    assert isinstance(ours, float) and isinstance(theirs, float)
    emit(
        BENCH_NAME,
        kind="summary",
        copies=sizes[-1],
        digestd_peak_mb=ours,
        pypdf_plain_peak_mb=theirs,
        peak_ratio=round(ours / theirs, 3) if theirs else None,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
