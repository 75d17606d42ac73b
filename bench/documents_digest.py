"""Digest every real HTML page and PDF under ../shared/data/docs and print one JSON line each:
canonical chars, digest chars, compression ratio, evidence count, ingest and digest times, and
(for readability pages) token F1 of the canonical text against the gold `expected.html`.

    /tmp/venv/bin/python bench/documents_digest.py [--quick] [--query "..."] [--repeat N]

Every locator is verified (the digest raises otherwise). PDFs that cannot be digested (encrypted
without password, no text layer) print their error code and reason instead. A `summary` line
counts both. `--quick` digests each document once (the CI smoke size). Exit 2 when the data is
absent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from bench._support import emit
from runner.documents.digest import digest_document_offline
from runner.documents.errors import DocumentError
from runner.documents.ingest import ingest_bytes
from runner.documents.text_f1 import html_reference_text, token_f1

BENCH_NAME = "documents_digest"
DATA = _BENCH.parents[1] / "shared" / "data" / "docs"
DEFAULT_QUERIES = {
    "google-sre-book-1": "How should alerting and paging work for distributed systems?",
    "ietf-1": "How does remoteStorage handle authorization with bearer tokens?",
    "lwn-1": "What is the Arduino trademark dispute about?",
    "mathjax": "What equations are shown?",
    "mozilla-1": "How can I customize Firefox with themes and add-ons?",
    "rtl-1": "lorem ipsum",
    "wikipedia": "What is the history of the Mozilla Foundation and Firefox?",
    "acl19irc": "How was the conversation disentanglement dataset annotated?",
}
PASSWORDS = {"tricky_encrypted_libreoffice-writer-password": "openpassword"}


def _documents() -> list[tuple[str, str, Path]]:
    pages = sorted((DATA / "html" / "readability").glob("*/source.html"))
    pdfs = sorted((DATA / "pdf").glob("*.pdf"))
    return [(p.parent.name, "html", p) for p in pages] + [(p.stem, "pdf", p) for p in pdfs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one digest run per document")
    parser.add_argument("--query", help="one query for every document (default: one per document)")
    parser.add_argument("--repeat", type=int, default=None, help="digest runs per document (3)")
    args = parser.parse_args()
    repeat = args.repeat or (1 if args.quick else 3)
    if not DATA.is_dir():
        print(f"no data at {DATA}: ../shared/data/docs lives beside the checkout", file=sys.stderr)
        return 2
    digested = refused = 0
    for name, kind, path in _documents():
        query = args.query or DEFAULT_QUERIES.get(name, "What is this document about?")
        row: dict[str, object] = {"document": name, "format": kind, "bytes": path.stat().st_size}
        started = time.perf_counter()
        try:
            document = ingest_bytes(path.read_bytes(), None, password=PASSWORDS.get(name))
        except DocumentError as error:
            refused += 1
            emit(BENCH_NAME, kind="run", **row, error=error.code, reason=error.reason)
            continue
        row["ingest_ms"] = round((time.perf_counter() - started) * 1000, 1)
        times = []
        for _ in range(max(1, repeat)):
            started = time.perf_counter()
            outcome = digest_document_offline(document, query, source_id=name)
            times.append((time.perf_counter() - started) * 1000)
        payload = outcome.payload
        row.update(
            canonical_chars=payload.original_chars,
            digest_chars=payload.digest_chars,
            compression_ratio=payload.compression_ratio,
            evidence=len(payload.evidence_snippets),
            key_points=len(payload.key_points),
            summary_chars=len(payload.summary),
            original_tokens=outcome.fidelity.original_tokens,
            final_tokens=outcome.fidelity.final_tokens,
            digest_ms=round(statistics.median(times), 2),
            warnings=[w.code for w in document.warnings + outcome.warnings],
        )
        gold = path.parent / "expected.html"
        if kind == "html" and gold.exists():
            f1 = token_f1(document.canonical_text, html_reference_text(gold.read_bytes()))
            row.update(
                f1=round(f1.f1, 3), precision=round(f1.precision, 3), recall=round(f1.recall, 3)
            )
        digested += 1
        emit(BENCH_NAME, kind="run", **row)
    emit(
        BENCH_NAME,
        kind="summary",
        documents=digested + refused,
        digested=digested,
        refused=refused,
        repeat=repeat,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
