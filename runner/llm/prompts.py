"""Versioned prompt files (runner/prompts/NAME.VERSION.md), loaded once and never altered.

A prompt's text is the static prefix of every request of its kind, so it must stay
byte-identical between calls for provider prompt caching to hit: nothing here formats it. A
change of wording is a new version file; the text's hash is part of the extractor fingerprint
anyway, so even an edit in place invalidates cached chunk results.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

# v2: the same rules in half the words, no duplicate of what the tool schema says, a one-item
# example (bench/pipeline.py: prompt tokens per content token, docs/benchmarks.md section 2).
# v3: known items include the channel's still-open tracked items, which are not to be repeated
# unless the chunk adds to them.
MAP_PROMPT_VERSION = "v3"
# v2: cited overview and highlight sentences (contract 2.0).
REDUCE_PROMPT_VERSION = "v2"
MAP_PROMPT = "map"
# The map prompt of a request carrying several chunks (runner.llm.pack): map v3's rules, per chunk.
MAP_PACK_PROMPT = "map_pack"
MAP_PACK_PROMPT_VERSION = "v1"
REDUCE_PROMPT = "reduce"
DOC_SUMMARY_PROMPT = "doc_summary"  # the document summarizer (runner.documents.llm_summary)
# A document too large for one request: its map and reduce (runner.documents.map_reduce).
DOC_MAP_PROMPT = "doc_map"
DOC_REDUCE_PROMPT = "doc_reduce"
REPORT_PROMPT = "report"  # the report writer (runner.reports.llm_writer)


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@cache
def load_prompt(name: str, version: str) -> Prompt:
    """The prompt `name` at `version`; raises FileNotFoundError for an unknown one."""
    path = resources.files("runner").joinpath("prompts", f"{name}.{version}.md")
    return Prompt(name=name, version=version, text=path.read_text(encoding="utf-8"))
