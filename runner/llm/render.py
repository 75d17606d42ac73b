"""The messages of map and reduce requests: a static system prompt first, then the data.

The system message is the prompt file's text and nothing else, identical in every request of
its kind (with the tool schema it forms the cacheable prefix). Everything that varies — known
items, chunk XML, summaries, window facts — goes in the user message after it, wrapped in
elements and XML-escaped, because it is untrusted data.
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from runner.core.chunks import Chunk
from runner.core.contract import ChunkSummary, Digest
from runner.core.vocabulary import KnownItem
from runner.core.window import Window, WindowMessage

# Characters of a top message shown to the reduce step: enough to see what it is about.
TOP_MESSAGE_CHARS = 600


def system_message(prompt_text: str) -> dict[str, Any]:
    return {"role": "system", "content": prompt_text}


# Known items are shown under short aliases (`P1`, `P2`, ...) rather than their keys
# (`c1a2b3c.K12`): a line costs about 9 tokens less, in every map request that carries up to 40
# of them. The extractor maps an alias the model cites back to the key (`shown_known_items`).
KNOWN_ALIAS_PREFIX = "P"


def shown_known_items(known_items: list[KnownItem], limit: int) -> dict[str, KnownItem]:
    """The most recent `limit` known items by the alias they are shown under, oldest first."""
    if limit <= 0:
        return {}
    shown = known_items[-limit:]
    return {f"{KNOWN_ALIAS_PREFIX}{number}": item for number, item in enumerate(shown, 1)}


def render_known_items(known_items: list[KnownItem], limit: int) -> str:
    """The most recent `limit` known items as `alias kind: title` lines, or "" when none."""
    shown = shown_known_items(known_items, limit)
    if not shown:
        return ""
    lines = [f"{alias} {escape(item.kind)}: {escape(item.title)}" for alias, item in shown.items()]
    return "<known_items>\n" + "\n".join(lines) + "\n</known_items>\n"


def map_user_message(
    chunk: Chunk, known_items: list[KnownItem], known_limit: int
) -> dict[str, Any]:
    """The user message of a map request: known items, then the chunk (already escaped)."""
    count = len(chunk.message_ids)
    content = (
        render_known_items(known_items, known_limit)
        + f'<chunk index="{chunk.index}" messages="{count}">\n{chunk.xml}\n</chunk>\n'
        + "Call emit_chunk_summary for this chunk."
    )
    return {"role": "user", "content": content}


def summary_payload(output: ChunkSummary | Digest, *, short: bool) -> dict[str, Any]:
    """An output as the reduce step sees it: defaults left out; `short` also trims free text
    (the second degradation step) but never pointers, ids or URLs."""
    data = output.model_dump(mode="json", exclude_defaults=True, exclude_none=True)
    if not short:
        return data
    if "chunk_summary" in data:
        data["chunk_summary"] = data["chunk_summary"][:300]
    if "overview" in data:  # a partial digest's cited sentences: the first few, ids kept
        data["overview"] = data["overview"][:3]
    data.pop("highlights", None)
    data.pop("search_keywords", None)
    for topic in data.get("topics", []):
        topic.pop("summary", None)
    for link in data.get("links", []):
        link.pop("description", None)
    for item in data.get("knowledge_items", []):
        if "content" in item:
            item["content"] = item["content"][:300]
    return data


def render_summary(position: int, label: str, payload: dict[str, Any]) -> str:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return (
        f"<summary index={quoteattr(str(position))} of={quoteattr(label)}>{escape(body)}</summary>"
    )


def render_top_messages(messages: list[WindowMessage]) -> str:
    if not messages:
        return ""
    lines = [
        f"<message id={quoteattr(m.message_id)} author={quoteattr(m.author)}>"
        f"{escape(m.normalized_text[:TOP_MESSAGE_CHARS])}</message>"
        for m in messages
    ]
    return "<top_messages>\n" + "\n".join(lines) + "\n</top_messages>\n"


def render_window(window: Window, note: str) -> str:
    messages = window.messages
    first = messages[0].message_id if messages else ""
    last = messages[-1].message_id if messages else ""
    attributes = (
        f"channel={quoteattr(window.channel_name)} messages_total={quoteattr(str(len(messages)))} "
        f"first_message_id={quoteattr(first)} last_message_id={quoteattr(last)}"
    )
    return f"<window {attributes}>{escape(note)}</window>\n"


def reduce_user_message(
    window: Window,
    summaries: list[str],
    top_messages: str,
    note: str,
    *,
    partial: bool,
    preamble: str = "",
) -> dict[str, Any]:
    """The user message of a reduce request over already rendered summaries, opening with
    `preamble` (already escaped: what the caller's requests all share, such as a document
    digest's research question)."""
    task = (
        "This is a partial merge of consecutive chunks; a later merge combines it with the "
        "others. Call emit_digest for these summaries."
        if partial
        else "Call emit_digest for the whole window."
    )
    content = (
        preamble
        + render_window(window, note)
        + "<summaries>\n"
        + "\n".join(summaries)
        + "\n</summaries>\n"
        + top_messages
        + task
    )
    return {"role": "user", "content": content}
