"""Relevance and credibility scores of a report's sources: two numbers in [0, 1] per source,
computed from what the report knows, deterministic, each component's weight below.

- Relevance: how well what the report quotes of a source matches its question. Each evidence
  unit is scored for each sub-question by BM25 and divided by that sub-question's best unit
  (`runner.reports.merge.normalized`; refinement units by their open point's best), so 1.0 is
  the best-matching passage the sources hold for some part of the question. A source's
  relevance is the best such score among its cited spans; a span no ranking scored (none
  should be) counts 0. Not rescaled again over the cited sources: a source cited only for a
  weak match keeps a low score instead of being stretched up to look like the best one.
- Credibility: how much the source says about where it comes from, by its kind.
  A document: a base, plus each of a title, an author, a publisher and a publication date
  (a reader can check who said it and when), plus an extraction without degrading warnings
  (the quoted text is what the document says), plus a near-duplicate at another URL or file
  (the same text published twice); at most 1.0. A chat message: a base, plus when its author is
  a regular of the channel in the messages the report read, plus when a stored digest of the
  channel cites it for a decision or an action item (the channel settled on it); at most 0.7,
  below an attributed, cleanly extracted document (anyone may write anything in a channel). No
  content judgement: nothing here says a claim is true.

Old stored reports have no scores: they read as null (not the 0.5 a new source would never
get), so a client can tell "not scored" from "scored in the middle".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from runner.reports.evidence import ChannelMessage, DigestClaim, RankedEvidence
from runner.reports.sources import (
    DocumentSource,
    MessageSource,
    RegisteredSource,
    SourceRegistry,
    SourceScores,
)

# Credibility weights, all in one place: a document's sum to 1.0, a message's to 0.7.
# A document starts at 0.3: it was chosen by the user and is a fixed text, but unattributed.
DOCUMENT_BASE = 0.3
# Who wrote it and when weigh most: they let a reader check the claim elsewhere.
DOCUMENT_AUTHOR = 0.15
DOCUMENT_PUBLISHER = 0.1
DOCUMENT_PUBLISHED_AT = 0.1
# A stored title (its own, else its first heading or its file's name): nearly every document
# has one, so it adds little; one without any is a bare text.
DOCUMENT_TITLE = 0.05
# No degrading extraction warning (`runner.documents.policy.estimate_quality`): the quoted text
# is the document's, not a sparse or misdecoded view of it.
DOCUMENT_CLEAN_EXTRACTION = 0.2
# Found at two places (near-duplicates cited as one source, or a copy of an earlier document):
# someone else published the same text.
DOCUMENT_CONFIRMED = 0.1
# A chat message starts above a bare document (it names its author and time) but tops out below
# an attributed one: informal, unedited, and its author is a nick.
MESSAGE_BASE = 0.4
# Its author wrote at least `REGULAR_AUTHOR_SHARE` of the channel's messages read (and at least
# `REGULAR_AUTHOR_MIN_MESSAGES`): a regular of the channel, not a passer-by.
MESSAGE_REGULAR_AUTHOR = 0.15
# A stored digest of the channel cites it for one of `SETTLED_KINDS`: the channel acted on it.
MESSAGE_SETTLED = 0.15
REGULAR_AUTHOR_SHARE = 0.1
REGULAR_AUTHOR_MIN_MESSAGES = 3
SETTLED_KINDS = frozenset({"decision", "action_item"})


@dataclass(frozen=True)
class DocumentFacts:
    """What credibility needs of a document beyond its attribution: whether it has a stored
    title, and whether its extraction was degraded."""

    titled: bool
    degraded: bool


@dataclass(frozen=True)
class ChannelFacts:
    """What credibility needs of the channels read: the regular authors of each channel
    (channel name, author) and the messages a digest settled on (channel name, external id)."""

    regular_authors: frozenset[tuple[str, str]] = frozenset()
    settled_messages: frozenset[tuple[str, str]] = frozenset()


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 3)


def document_credibility(
    titled: bool,
    author: bool,
    publisher: bool,
    published_at: bool,
    degraded: bool,
    confirmed: bool,
) -> float:
    """A document's credibility from what it states and how it was extracted (weights above)."""
    score = DOCUMENT_BASE
    score += DOCUMENT_TITLE if titled else 0.0
    score += DOCUMENT_AUTHOR if author else 0.0
    score += DOCUMENT_PUBLISHER if publisher else 0.0
    score += DOCUMENT_PUBLISHED_AT if published_at else 0.0
    score += 0.0 if degraded else DOCUMENT_CLEAN_EXTRACTION
    score += DOCUMENT_CONFIRMED if confirmed else 0.0
    return _clamp(score)


def message_credibility(regular_author: bool, settled: bool) -> float:
    """A chat message's credibility (weights above)."""
    score = MESSAGE_BASE
    score += MESSAGE_REGULAR_AUTHOR if regular_author else 0.0
    score += MESSAGE_SETTLED if settled else 0.0
    return _clamp(score)


def channel_facts(
    channels: Iterable[list[ChannelMessage]], claims: Iterable[list[DigestClaim]]
) -> ChannelFacts:
    """The regular authors of each channel read and the messages its digests settled on."""
    regulars: set[tuple[str, str]] = set()
    settled: set[tuple[str, str]] = set()
    for messages, channel_claims in zip(channels, claims, strict=False):
        if not messages:
            continue
        channel = messages[0].channel
        counts: dict[str, int] = {}
        for message in messages:
            counts[message.author] = counts.get(message.author, 0) + 1
        least = max(REGULAR_AUTHOR_MIN_MESSAGES, REGULAR_AUTHOR_SHARE * len(messages))
        regulars.update((channel, a) for a, n in counts.items() if n >= least)
        for claim in channel_claims:
            if claim.kind in SETTLED_KINDS:
                settled.update((channel, message_id) for message_id in claim.message_ids)
    return ChannelFacts(frozenset(regulars), frozenset(settled))


def span_relevance(ranked: Iterable[RankedEvidence]) -> dict[str, float]:
    """Span key → the best normalized score of a unit quoting it (module docstring)."""
    best: dict[str, float] = {}
    for item in ranked:
        for source in item.evidence.sources:
            key = source.span_key
            best[key] = max(best.get(key, 0.0), item.score)
    return best


def source_relevance(entry: RegisteredSource, by_span: Mapping[str, float]) -> float:
    """The best score among a source's cited spans."""
    return _clamp(max((by_span.get(span.span_key, 0.0) for span in entry.spans), default=0.0))


def source_credibility(
    entry: RegisteredSource, documents: Mapping[str, DocumentFacts], channels: ChannelFacts
) -> float:
    """A source's credibility by its kind; a document unknown to `documents` counts as
    untitled and cleanly extracted (what its attribution says is still counted)."""
    first = entry.first
    if isinstance(first, MessageSource):
        return message_credibility(
            (first.channel, first.author) in channels.regular_authors,
            (first.channel, first.message_id) in channels.settled_messages,
        )
    assert isinstance(first, DocumentSource)
    facts = documents.get(first.document_id, DocumentFacts(titled=False, degraded=False))
    attribution = first.attribution
    cited_documents = {span.document_id for span in entry.spans if isinstance(span, DocumentSource)}
    copy_of_another = attribution.group is not None and attribution.group != first.document_id
    return document_credibility(
        titled=facts.titled,
        author=bool(attribution.author),
        publisher=bool(attribution.publisher),
        published_at=attribution.published_at is not None,
        degraded=facts.degraded,
        confirmed=len(cited_documents) > 1 or copy_of_another,
    )


def score_sources(
    registry: SourceRegistry,
    ranked: Iterable[RankedEvidence],
    documents: Mapping[str, DocumentFacts],
    channels: ChannelFacts,
) -> dict[str, SourceScores]:
    """Canonical source key → its scores, for every source of the registry."""
    by_span = span_relevance(ranked)
    return {
        entry.key: SourceScores(
            source_credibility(entry, documents, channels), source_relevance(entry, by_span)
        )
        for entry in registry.entries()
    }
