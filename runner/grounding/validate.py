"""The validator every extractor's output passes before anything is stored.

Checks, per item:
- every cited message id exists in the window (else dropped: `unknown_message_id`);
- a pointer slices the cited message's normalized text to its quote (re-anchored when only the
  offsets are off; else dropped: `pointer_unresolved`);
- a synthesized claim shares at least `min_overlap` of its words with the messages it cites
  (else dropped: `low_support`), and cites at least one message (else dropped: `no_citation`);
- a link's URL occurs verbatim in a message it cites (else dropped: `url_not_in_source`);
- a topic cites at least one message and its title is supported by them, like a claim;
- digest prose: each overview and highlight sentence is a claim with its own citations (dropped
  like one), and each kept citation is anchored to the characters it rests on
  (runner.grounding.citations); the title and each search keyword must be made of the window's words
  (`low_support`; a failed title is replaced by the kept topics' titles);
- a version-sensitive knowledge item without `context_version` is kept and flagged;
- an item written in another script than its sources is kept and flagged (`language_mismatch`).
Per output: `signal_quality == empty` with non-empty lists is corrected to `low` and flagged.

Dropped items are returned as `Rejection`s with their reason; the job stores them so the API can
show what was removed and why, with a `CitationAudit` of the prose. Nothing that failed a check
is returned as valid.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from runner.core.contract import (
    VERSION_SENSITIVE_KINDS,
    ActionItem,
    Artifact,
    ChunkSummary,
    CitedSentence,
    ContentPointer,
    Decision,
    Digest,
    KnowledgeItem,
    Link,
    OpenQuestion,
    SignalLevel,
    SignalQuality,
    Topic,
)
from runner.grounding.citations import Anchor, CitationAudit, anchor
from runner.grounding.claim_support import (
    DEFAULT_MIN_OVERLAP,
    dominant_script,
    share_in,
    support_share,
    token_set,
)
from runner.grounding.pointers import MatchKind, PointerError, resolve_pointer

Output = TypeVar("Output", ChunkSummary, Digest)

PROSE_FIELDS = ("overview", "highlights")
ITEM_FIELDS = (
    "topics",
    "decisions",
    "action_items",
    "open_questions",
    "links",
    "artifacts",
    "knowledge_items",
)


@dataclass(frozen=True)
class Rejection:
    field: str
    label: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"field": self.field, "label": self.label[:200], "reason": self.reason}


@dataclass
class ValidationResult(Generic[Output]):
    """The output with only valid items (pointers corrected), their flags, and what was dropped.

    `item_flags[field][i]` are the flags of the i-th kept item of `field`;
    `pointer_matches[field][i]` how its pointer was anchored (artifacts, knowledge items);
    `anchors[field][i]` the anchored citations of the i-th kept sentence of a prose field."""

    output: Output
    item_flags: dict[str, list[list[str]]]
    pointer_matches: dict[str, list[MatchKind | None]]
    rejections: list[Rejection] = field(default_factory=list)
    output_flags: list[str] = field(default_factory=list)
    anchors: dict[str, list[list[Anchor]]] = field(default_factory=dict)
    audit: CitationAudit = field(default_factory=CitationAudit)

    def rejection_counts(self) -> dict[str, int]:
        return dict(Counter(rejection.reason.split(":", 1)[0] for rejection in self.rejections))


class _Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Checker:
    texts: dict[str, str]
    min_overlap: float
    anchored: Counter[tuple[str, str]] = field(default_factory=Counter)

    def cited_texts(self, message_ids: list[str], *, required: bool) -> list[str]:
        if required and not message_ids:
            raise _Rejected("no_citation: the item cites no message")
        missing = [message_id for message_id in message_ids if message_id not in self.texts]
        if missing:
            raise _Rejected(f"unknown_message_id: {', '.join(missing[:3])} not in the window")
        return [self.texts[message_id] for message_id in message_ids]

    def supported(self, claim: str, sources: list[str]) -> None:
        self.share_enough(support_share(claim, sources))

    def share_enough(self, share: float | None, where: str = "the cited messages") -> None:
        if share is None:
            raise _Rejected("low_support: the claim has no checkable words")
        if share < self.min_overlap:
            raise _Rejected(
                f"low_support: {share:.0%} of its words are in {where} "
                f"(needs {self.min_overlap:.0%})"
            )

    def pointer(self, pointer: ContentPointer) -> tuple[ContentPointer, MatchKind]:
        key = (pointer.message_id, pointer.quote or f"{pointer.char_start}:{pointer.char_end}")
        try:
            resolved = resolve_pointer(pointer, self.texts, occurrence=self.anchored[key])
        except PointerError as error:
            raise _Rejected(f"pointer_unresolved: {error}") from None
        self.anchored[key] += 1
        corrected = ContentPointer(
            message_id=resolved.message_id,
            char_start=resolved.char_start,
            char_end=resolved.char_end,
            quote=resolved.text,
        )
        return corrected, resolved.match

    @staticmethod
    def language_flags(claim: str, sources: list[str]) -> list[str]:
        claim_script = dominant_script(claim)
        source_script = dominant_script(" ".join(sources))
        if claim_script and source_script and claim_script != source_script:
            return [f"language_mismatch: item is {claim_script}, sources are {source_script}"]
        return []

    def check(self, field_name: str, item: BaseModel) -> tuple[BaseModel, list[str], Any]:
        """The item as it may be stored, its flags, and its pointer match kind (or None)."""
        match item:
            case Topic():
                self.supported(item.title, self.cited_texts(item.message_ids, required=True))
                return item, [], None
            case Decision() | ActionItem() | OpenQuestion():
                sources = self.cited_texts(item.message_ids, required=True)
                self.supported(item.text, sources)
                return item, self.language_flags(item.text, sources), None
            case Link():
                sources = self.cited_texts(item.message_ids, required=True)
                if not any(item.url in source for source in sources):
                    raise _Rejected("url_not_in_source: the URL is not in a cited message")
                return item, [], None
            case Artifact():
                corrected, matched = self.pointer(item.pointer)
                return item.model_copy(update={"pointer": corrected}), [], matched
            case KnowledgeItem():
                return self.knowledge_item(item)
        raise TypeError(f"unexpected item in {field_name}: {type(item).__name__}")

    def knowledge_item(self, item: KnowledgeItem) -> tuple[BaseModel, list[str], Any]:
        flags: list[str] = []
        matched: MatchKind | None = None
        if item.content_pointer is not None:
            corrected, matched = self.pointer(item.content_pointer)
            sources = self.cited_texts(item.message_ids, required=False)
            item = item.model_copy(update={"content_pointer": corrected})
        else:
            assert item.content is not None
            sources = self.cited_texts(item.message_ids, required=True)
            self.supported(item.content, sources)
            flags += self.language_flags(item.content, sources)
        if item.kind in VERSION_SENSITIVE_KINDS and not item.context_version:
            flags.append("missing_context_version: version-sensitive kind without a version")
        return item, flags, matched


def _label(item: BaseModel) -> str:
    for attribute in ("title", "text", "url", "sentence"):
        value = getattr(item, attribute, None)
        if isinstance(value, str):
            return value
    return type(item).__name__


def _check_sentences(
    checker: _Checker,
    field_name: str,
    sentences: list[CitedSentence],
    rejections: list[Rejection],
    audit: CitationAudit,
) -> tuple[list[CitedSentence], list[list[Anchor]]]:
    """The sentences that cite existing messages supporting them, each with its anchors. A
    cited message sharing no word with its sentence is unrelated: its citation is removed (the
    support of the rest is unchanged, since it contributed no word)."""
    kept: list[CitedSentence] = []
    anchors: list[list[Anchor]] = []
    for sentence in sentences:
        try:
            sources = checker.cited_texts(sentence.message_ids, required=True)
            checker.supported(sentence.sentence, sources)
        except _Rejected as rejected:
            rejections.append(Rejection(field_name, sentence.sentence, rejected.reason))
            audit.record(field_name, False, rejected.reason)
            continue
        ids = list(dict.fromkeys(sentence.message_ids))
        related = [m for m in ids if support_share(sentence.sentence, [checker.texts[m]])]
        if len(related) < len(ids):
            audit.reasons["unrelated_citation_removed"] += len(ids) - len(related)
        kept.append(sentence.model_copy(update={"message_ids": related}))
        anchors.append([anchor(sentence.sentence, m, checker.texts[m]) for m in related])
        audit.record(field_name, True)
    return kept, anchors


def validate_sentences(
    sentences: list[CitedSentence],
    texts: dict[str, str],
    *,
    field_name: str,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
) -> tuple[list[CitedSentence], list[list[Anchor]], list[Rejection]]:
    """Cited prose told beside a digest's own fields (each period of a multi-day window),
    checked exactly as overview sentences are: the kept sentences, their anchors, and what was
    dropped with why."""
    checker = _Checker(texts=texts, min_overlap=min_overlap)
    rejections: list[Rejection] = []
    kept, anchors = _check_sentences(checker, field_name, sentences, rejections, CitationAudit())
    return kept, anchors, rejections


def _check_digest_prose(
    checker: _Checker,
    digest: Digest,
    update: dict[str, Any],
    channel_name: str,
    window_words: set[str],
    rejections: list[Rejection],
) -> tuple[dict[str, list[list[Anchor]]], CitationAudit]:
    """Overview and highlight sentences, title and search keywords (see the module docstring);
    writes the kept values into `update`."""
    audit = CitationAudit()
    anchors: dict[str, list[list[Anchor]]] = {}
    for field_name in PROSE_FIELDS:
        sentences = getattr(digest, field_name)
        update[field_name], anchors[field_name] = _check_sentences(
            checker, field_name, sentences, rejections, audit
        )
    audit.cited_overview = sum(1 for cited in anchors["overview"] if cited)
    keywords: list[str] = []
    for keyword in digest.search_keywords:
        try:
            checker.share_enough(share_in(keyword, window_words), "the window")
        except _Rejected as rejected:
            rejections.append(Rejection("search_keywords", keyword, rejected.reason))
            audit.record("search_keywords", False, rejected.reason)
            continue
        keywords.append(keyword)
        audit.record("search_keywords", True)
    update["search_keywords"] = keywords
    try:
        checker.share_enough(share_in(digest.title, window_words), "the window")
    except _Rejected as rejected:
        rejections.append(Rejection("title", digest.title, rejected.reason))
        audit.title_replaced = True
        audit.reasons[rejected.reason.split(":", 1)[0]] += 1
        update["title"] = _fallback_title(update["topics"], channel_name)
    return anchors, audit


def _fallback_title(topics: list[Topic], channel_name: str) -> str:
    """A title made of what passed validation: the first kept topics' titles."""
    subject = "; ".join(topic.title for topic in topics[:3])
    if subject and channel_name:
        return f"{channel_name}: {subject}"[:120]
    return (subject or channel_name or "digest")[:120]


def words_of_window(texts: Iterable[str], channel_name: str = "") -> set[str]:
    """The words a digest's title and search keywords may be made of: the channel's name may
    title its digest; every other word comes from the messages."""
    return token_set([channel_name, *texts])


def validate_output(
    output: Output,
    texts: dict[str, str],
    *,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    channel_name: str = "",
    window_words: set[str] | None = None,
) -> ValidationResult[Output]:
    """Validate a map or reduce output against the window (`texts`: id → normalized text;
    `channel_name` may occur in a digest's title and keywords). `window_words`: what
    `words_of_window(texts.values(), channel_name)` gives, when the caller has it already (a
    digest's title and keywords are checked against it; it costs a pass over every message)."""
    checker = _Checker(texts=texts, min_overlap=min_overlap)
    update: dict[str, Any] = {}
    item_flags: dict[str, list[list[str]]] = {}
    pointer_matches: dict[str, list[MatchKind | None]] = {}
    rejections: list[Rejection] = []
    for field_name in ITEM_FIELDS:
        kept: list[BaseModel] = []
        item_flags[field_name] = []
        pointer_matches[field_name] = []
        for item in getattr(output, field_name):
            try:
                checked, flags, matched = checker.check(field_name, item)
            except _Rejected as rejected:
                rejections.append(Rejection(field_name, _label(item), rejected.reason))
                continue
            kept.append(checked)
            item_flags[field_name].append(flags)
            pointer_matches[field_name].append(matched)
        update[field_name] = kept
    notable = [message_id for message_id in output.notable_message_ids if message_id in texts]
    if len(notable) != len(output.notable_message_ids):
        rejections.append(
            Rejection("notable_message_ids", "notable ids", "unknown_message_id: dropped")
        )
    update["notable_message_ids"] = notable
    output_flags: list[str] = []
    signal = output.signal_quality
    has_items = any(update[field_name] for field_name in ITEM_FIELDS)
    if signal.level == SignalLevel.EMPTY and has_items:
        output_flags.append("signal_inconsistent: empty signal with items; corrected to low")
        update["signal_quality"] = SignalQuality(
            level=SignalLevel.LOW, reason=f"corrected from empty: {signal.reason}"[:300]
        )
    anchors: dict[str, list[list[Anchor]]] = {}
    audit = CitationAudit()
    if isinstance(output, Digest):
        if window_words is None:
            window_words = words_of_window(texts.values(), channel_name)
        anchors, audit = _check_digest_prose(
            checker, output, update, channel_name, window_words, rejections
        )
    validated = output.model_copy(update=update)
    return ValidationResult(
        validated, item_flags, pointer_matches, rejections, output_flags, anchors, audit
    )
