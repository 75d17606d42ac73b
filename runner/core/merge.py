"""The deterministic reduce: chunk outputs merged into one list of digest items per kind.

Both reduce paths merge with these functions: the offline extractor's reduce
(`runner.extract.offline.digest`) and the LLM stack's plain merge (`merge_outputs`, used when
a reduce call fails, runner.llm.reduce). Items arrive in window order; the first of a group of
duplicates keeps its place. What makes two items one differs on purpose between the two paths,
so it is a named rule set (`MergeRules`), not a flag on each function:

- `AS_WRITTEN` (the LLM's plain merge): the items are a model's words, already validated; the
  merge must not rewrite them, so only exact repeats (same text up to case and outer spaces,
  same URL, same pointer span) are one item, and the first is kept as it is.
- the offline rules (`runner.extract.offline.digest.OFFLINE_RULES`): the items are cut from
  messages by rules, so the same claim from two chunks differs only in filler words; items with
  the same content words are one, and the kept item cites the union of their messages.

`merge_outputs` calls nothing and invents nothing: every item it returns was in its input, and
the pipeline validates the result again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from runner.core.contract import (
    ActionItem,
    Artifact,
    ChunkSummary,
    CitedSentence,
    Coverage,
    Decision,
    Digest,
    KnowledgeItem,
    Link,
    SignalLevel,
    SignalQuality,
    Topic,
)
from runner.core.window import Window

Item = TypeVar("Item")
Cited = TypeVar("Cited", Decision, ActionItem, Link, Topic)

SIGNAL_RANK = {SignalLevel.EMPTY: 0, SignalLevel.LOW: 1, SignalLevel.MEDIUM: 2, SignalLevel.HIGH: 3}


def contract_limit(model: type[BaseModel], field_name: str) -> int:
    """The `max_length` the contract gives `model.field_name`."""
    for meta in model.model_fields[field_name].metadata:
        if hasattr(meta, "max_length"):
            return int(meta.max_length)
    raise KeyError(field_name)


def union_ids(first: Sequence[str], second: Sequence[str], limit: int) -> list[str]:
    """`first` then the new ids of `second`, at most `limit`, order kept."""
    return list(dict.fromkeys([*first, *second]))[:limit]


def merge_by_key(
    items: Iterable[Item],
    key: Callable[[Item], Hashable],
    combine: Callable[[Item, Item], Item] | None = None,
) -> list[Item]:
    """One item per key, in first-seen order; a later duplicate is `combine`d into the kept
    item (dropped when `combine` is None)."""
    merged: dict[Hashable, Item] = {}
    for item in items:
        marker = key(item)
        if marker not in merged:
            merged[marker] = item
        elif combine is not None:
            merged[marker] = combine(merged[marker], item)
    return list(merged.values())


def _casefold_strip(text: str) -> str:
    return text.casefold().strip()


def _same_text(url: str) -> str:
    return url


def _span_or_content(item: KnowledgeItem) -> Hashable:
    pointer = item.content_pointer
    if pointer is not None:
        return ("pointer", pointer.message_id, pointer.char_start, pointer.char_end)
    return ("content", item.kind, _casefold_strip(item.content or ""))


@dataclass(frozen=True)
class MergeRules:
    """When items from different chunks are one item, and what the kept item becomes."""

    claim_key: Callable[[str], str]  # decisions, action items, open questions: by their text
    link_key: Callable[[str], str]  # links: by their URL
    knowledge_key: Callable[[KnowledgeItem], Hashable]
    # Artifacts are one when they point at the same span; with this, also when their quotes
    # have the same key (the same snippet posted twice).
    artifact_quote_key: Callable[[str], str] | None
    # The kept item cites the messages of its duplicates too (up to the contract's limit) and
    # takes what they add (an owner, a real link description); otherwise it is kept as written.
    union_citations: bool


AS_WRITTEN = MergeRules(
    claim_key=_casefold_strip,
    link_key=_same_text,
    knowledge_key=_span_or_content,
    artifact_quote_key=None,
    union_citations=False,
)


def _cited_by_both(kept: Cited, duplicate: Cited) -> Cited:
    """`kept` (a copy) citing the messages of both, at most what the contract allows."""
    limit = contract_limit(type(kept), "message_ids")
    ids = union_ids(kept.message_ids, duplicate.message_ids, limit)
    return kept.model_copy(update={"message_ids": ids})


def merge_decisions(items: Iterable[Decision], rules: MergeRules) -> list[Decision]:
    combine = _cited_by_both if rules.union_citations else None
    return merge_by_key(items, lambda item: rules.claim_key(item.text), combine)


def merge_action_items(items: Iterable[ActionItem], rules: MergeRules) -> list[ActionItem]:
    def combine(kept: ActionItem, duplicate: ActionItem) -> ActionItem:
        merged = _cited_by_both(kept, duplicate)
        return merged.model_copy(update={"owner": kept.owner or duplicate.owner})

    chosen = combine if rules.union_citations else None
    return merge_by_key(items, lambda item: rules.claim_key(item.text), chosen)


# The offline map's stand-in description of a bare URL, which a real description replaces.
PLACEHOLDER_LINK_DESCRIPTION = "Shared by"


def merge_links(items: Iterable[Link], rules: MergeRules) -> list[Link]:
    def combine(kept: Link, duplicate: Link) -> Link:
        merged = _cited_by_both(kept, duplicate)
        if kept.description.startswith(PLACEHOLDER_LINK_DESCRIPTION):
            merged = merged.model_copy(update={"description": duplicate.description})
        return merged

    chosen = combine if rules.union_citations else None
    return merge_by_key(items, lambda item: rules.link_key(item.url), chosen)


def merge_artifacts(items: Iterable[Artifact], rules: MergeRules) -> list[Artifact]:
    spans: set[tuple[str, int, int]] = set()
    quotes: set[str] = set()
    kept: list[Artifact] = []
    for item in items:
        pointer = item.pointer
        span = (pointer.message_id, pointer.char_start, pointer.char_end)
        quote_key = rules.artifact_quote_key
        quote = quote_key(pointer.quote or "") if quote_key is not None else None
        if span in spans or (quote is not None and quote in quotes):
            continue
        spans.add(span)
        if quote is not None:
            quotes.add(quote)
        kept.append(item)
    return kept


def merge_knowledge(items: Iterable[KnowledgeItem], rules: MergeRules) -> list[KnowledgeItem]:
    return merge_by_key(items, rules.knowledge_key)


def merge_topics(topics: Iterable[Topic]) -> list[Topic]:
    """Topics with the same title are one, citing the messages of both."""
    return merge_by_key(topics, lambda topic: _casefold_strip(topic.title), _cited_by_both)


def unique_keys(items: list[KnowledgeItem]) -> list[KnowledgeItem]:
    """A later item whose key is taken gets a numbered one (`key-2`)."""
    used: set[str] = set()
    renamed: list[KnowledgeItem] = []
    for item in items:
        key, suffix = item.key, 2
        while key in used:
            key = f"{item.key[:36]}-{suffix}"
            suffix += 1
        used.add(key)
        renamed.append(item if key == item.key else item.model_copy(update={"key": key}))
    return renamed


def merge_outputs(
    outputs: list[ChunkSummary | Digest], window: Window, note: str
) -> tuple[Digest, int]:
    """One Digest from `outputs` (in window order, merged `AS_WRITTEN`) and the number of items
    cut at the Digest's limits. The LLM stack's fallback when a reduce call fails: nothing the
    map step validated is lost (GUIDE principle 5)."""

    def every(field_name: str) -> list[Any]:
        return [item for output in outputs for item in getattr(output, field_name)]

    rules = AS_WRITTEN
    candidates: dict[str, list[Any]] = {
        "topics": merge_topics(every("topics")),
        "decisions": merge_decisions(every("decisions"), rules),
        "action_items": merge_action_items(every("action_items"), rules),
        "open_questions": merge_by_key(
            every("open_questions"), lambda item: rules.claim_key(item.text)
        ),
        "links": merge_links(every("links"), rules),
        "artifacts": merge_artifacts(every("artifacts"), rules),
        "knowledge_items": unique_keys(merge_knowledge(every("knowledge_items"), rules)),
    }
    dropped = 0
    fields: dict[str, Any] = {}
    for name, items in candidates.items():
        limit = contract_limit(Digest, name)
        dropped += max(0, len(items) - limit)
        fields[name] = items[:limit]
    notable_limit = contract_limit(Digest, "notable_message_ids")
    notable = list(dict.fromkeys(every("notable_message_ids")))[:notable_limit]

    best = max(outputs, key=lambda o: SIGNAL_RANK[o.signal_quality.level], default=None)
    signal = (
        best.signal_quality
        if best is not None
        else SignalQuality(level=SignalLevel.EMPTY, reason="no chunk produced a summary")
    )
    overview = _merged_overview(outputs, fields["decisions"])
    titles = [topic.title for topic in fields["topics"][:3]]
    title = f"{window.channel_name}: {'; '.join(titles)}" if titles else window.channel_name
    messages = window.messages
    digest = Digest(
        title=(title or "digest")[:120],
        overview=overview,
        highlights=[_cited(d.text, d.message_ids) for d in fields["decisions"][:5]],
        coverage=Coverage(
            messages_total=len(messages),
            messages_covered=len(messages),
            first_message_id=messages[0].message_id if messages else None,
            last_message_id=messages[-1].message_id if messages else None,
            notes=note[:1000],
        ),
        signal_quality=signal,
        notable_message_ids=notable,
        **fields,
    )
    return digest, dropped


def _cited(text: str, message_ids: list[str]) -> CitedSentence:
    limit = contract_limit(CitedSentence, "message_ids")
    if len(text) > 400:  # a chunk summary may be longer than a sentence: cut between words
        text = text[:400].rsplit(" ", 1)[0]
    return CitedSentence(sentence=text, message_ids=message_ids[:limit])


def _merged_overview(
    outputs: Sequence[ChunkSummary | Digest], decisions: list[Decision]
) -> list[CitedSentence]:
    """The partial digests' sentences, each chunk's summary citing the messages it called
    notable, then the decisions; the validator drops what its citations do not support."""
    sentences: list[CitedSentence] = []
    for output in outputs:
        if isinstance(output, Digest):
            sentences.extend(output.overview)
        elif output.chunk_summary and output.notable_message_ids:
            sentences.append(_cited(output.chunk_summary, output.notable_message_ids))
    sentences.extend(_cited(decision.text, decision.message_ids) for decision in decisions)
    unique = merge_by_key(sentences, lambda sentence: sentence.sentence.strip().casefold())
    return unique[: contract_limit(Digest, "overview")]
