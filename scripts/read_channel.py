"""Print what a reader of a channel's offline digest reads first: the overview, highlights,
signal and (for a multi-day window) the periods, each sentence numbered and quoting the
messages it cites, for a person to judge "worth reading" or "noise".

    .venv/bin/python scripts/read_channel.py FILE [FILE ...] [--channel NAME] [--json]

The files are read by the product's importers (format detected as `digestd import` does;
duplicate messages of overlapping files collapse by their stable ids), threaded as a digest
job threads a window of its own (`thread_window`), and digested by the offline extractor with
the default chunk budget, as `digestd digest` does without a model. No database is involved,
so a 72,000-message window reads in minutes on one core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.conversations.threads import thread_window
from runner.core.contract import CitedSentence
from runner.core.window import Window, WindowMessage
from runner.digests.periods import tell_periods
from runner.digests.pipeline import run_pipeline
from runner.extract.offline import OfflineExtractor
from runner.grounding.normalize import normalize_text
from runner.importers.detect import iter_records
from runner.importers.records import ParsedMessage

CHUNK_TOKENS = 6000  # DIGESTD_CHUNK_TOKENS' default
MIN_OVERLAP = 0.5


def read_window(paths: list[Path], channel: str) -> Window:
    """The files' messages, oldest first (ties in file order), each id once."""
    messages: dict[str, WindowMessage] = {}
    for path in paths:
        for record in iter_records(path):
            if not isinstance(record, ParsedMessage) or record.external_id in messages:
                continue
            messages[record.external_id] = WindowMessage(
                message_id=record.external_id,
                author=record.author,
                ts=record.ts,
                normalized_text=normalize_text(record.text),
                reply_to=record.reply_to,
            )
    # Time order, ties in file order: what the product reads (ORDER BY ts, then the import's id).
    ordered = sorted(messages.values(), key=lambda m: m.ts)
    return Window(channel_name=channel, messages=tuple(ordered))


def _quotes(sentence: CitedSentence, by_id: dict[str, WindowMessage]) -> list[str]:
    quoted = []
    for message_id in sentence.message_ids:
        message = by_id.get(message_id)
        if message is not None:
            quoted.append(f"<{message.author}> {message.normalized_text[:200]}")
    return quoted


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--channel", default="channel")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args()
    window = thread_window(read_window(args.files, args.channel))
    by_id = {m.message_id: m for m in window.messages}
    result = await run_pipeline(
        window, OfflineExtractor(), chunk_tokens=CHUNK_TOKENS, min_overlap=MIN_OVERLAP
    )
    digest = result.validation.output
    periods = tell_periods(window, MIN_OVERLAP).periods
    sections: list[tuple[str, list[CitedSentence]]] = [
        ("overview", list(digest.overview)),
        ("highlights", list(digest.highlights)),
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "messages": len(window.messages),
                    "title": digest.title,
                    "signal": [digest.signal_quality.level.value, digest.signal_quality.reason],
                    **{
                        name: [
                            {"sentence": s.sentence, "cites": _quotes(s, by_id)} for s in sentences
                        ]
                        for name, sentences in sections
                    },
                    "periods": [
                        {
                            "start": p.start.isoformat(),
                            "sentences": [
                                {"sentence": s.sentence, "cites": _quotes(s, by_id)}
                                for s in p.sentences
                            ],
                        }
                        for p in periods
                    ],
                },
                indent=1,
            )
        )
        return 0
    print(f"{len(window.messages)} messages; title: {digest.title}")
    print(f"signal: {digest.signal_quality.level.value} ({digest.signal_quality.reason})")
    for name, sentences in sections:
        print(f"\n{name}:")
        for number, sentence in enumerate(sentences, start=1):
            print(f"{name[0]}{number}. {sentence.sentence}")
            for quote in _quotes(sentence, by_id):
                print(f"      {quote}")
    if periods:
        told = sum(len(p.sentences) for p in periods)
        print(f"\nperiods: {len(periods)} ({periods[0].granularity.value}), {told} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
