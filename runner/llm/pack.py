"""Several consecutive chunks in one map request: its tool, its user message, and its answer
read back as one summary (or one problem) per chunk.

What every map request repeats (system prompt, tool schema, known items) is sent once for the
pack instead of once per chunk. The tool's schema is `emit_chunk_summary`'s, one item of an
array with the chunk's index added, so each chunk keeps its own output limits. The answer is
parsed loosely as a whole (an array of objects) and strictly per chunk: a chunk whose part is
missing, duplicated or invalid is named with its problem, and the extractor asks for it alone.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import Field, ValidationError

from runner.core.chunks import Chunk
from runner.core.contract import CHUNK_SUMMARY_TOOL, ChunkSummary, StrictModel, tool_schema
from runner.core.vocabulary import KnownItem
from runner.llm.render import render_known_items
from runner.llm.toolcall import describe_validation_error

PACK_TOOL = "emit_chunk_summaries"
_PACK_DESCRIPTION = "Report what each chunk of chat messages contains, one summary per chunk."


class PackedSummaries(StrictModel):
    """The pack's arguments as a whole: each part is checked on its own (`read_parts`), so one
    bad part costs a request for that chunk, not a re-ask of the whole pack."""

    summaries: list[dict[str, Any]] = Field(min_length=1)


@functools.cache
def _pack_tool_json() -> str:
    single = tool_schema(CHUNK_SUMMARY_TOOL)["function"]["parameters"]
    part = {
        **single,
        "properties": {
            "chunk": {"type": "integer", "description": "The chunk's index."},
            **single["properties"],
        },
        "required": ["chunk", *single.get("required", [])],
    }
    return json.dumps(
        {
            "type": "function",
            "function": {
                "name": PACK_TOOL,
                "description": _PACK_DESCRIPTION,
                "parameters": {
                    "type": "object",
                    "properties": {"summaries": {"type": "array", "items": part, "minItems": 1}},
                    "required": ["summaries"],
                    "additionalProperties": False,
                },
            },
        }
    )


def pack_tool_schema() -> dict[str, Any]:
    """The OpenAI `tools` entry of a packed map request (a fresh copy each call)."""
    schema: dict[str, Any] = json.loads(_pack_tool_json())
    return schema


def pack_user_message(
    chunks: list[Chunk], known_items: list[KnownItem], known_limit: int
) -> dict[str, Any]:
    """The user message of a packed map request: the known items once, then each chunk (already
    escaped) as the single-chunk request shows it."""
    parts = [
        f'<chunk index="{chunk.index}" messages="{len(chunk.message_ids)}">\n{chunk.xml}\n</chunk>\n'
        for chunk in chunks
    ]
    content = (
        render_known_items(known_items, known_limit)
        + "".join(parts)
        + f"Call {PACK_TOOL} with one summary for each of these {len(chunks)} chunks."
    )
    return {"role": "user", "content": content}


def read_parts(packed: PackedSummaries, chunks: list[Chunk]) -> dict[int, ChunkSummary | str]:
    """Each chunk's summary by its index, or what is wrong with its part: missing, given twice
    (the first is kept), or invalid against the contract (said without echoing the values).
    Parts naming a chunk that is not in the pack are ignored."""
    wanted = {chunk.index for chunk in chunks}
    found: dict[int, ChunkSummary | str] = {}
    for part in packed.summaries:
        index = part.get("chunk")
        if not isinstance(index, int) or isinstance(index, bool) or index not in wanted:
            continue
        if index in found:
            continue
        body = {key: value for key, value in part.items() if key != "chunk"}
        try:
            found[index] = ChunkSummary.model_validate(body)
        except ValidationError as error:
            found[index] = "schema violations: " + describe_validation_error(error)
    for index in wanted - found.keys():
        found[index] = "no summary for this chunk"
    return found


__all__ = [
    "PACK_TOOL",
    "PackedSummaries",
    "pack_tool_schema",
    "pack_user_message",
    "read_parts",
]
