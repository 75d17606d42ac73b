"""Evidence for a report's question: the sentences of the chosen channels' messages and of the
chosen documents, each already a citable source, ranked by BM25 (`runner.grounding.bm25`).

Units are sentences, not chunks, because the offline writer quotes them whole: a message is split
into its sentences (`runner.grounding.citations.sentence_spans`, never across a line), a document into its
evidence chunks (`runner.documents.evidence_chunks`, never across a page) and each chunk into
the sentences the document path quotes (`runner.documents.prose.sentence_spans`, across wrapped
lines); a table fragment or a running header (`runner.documents.prose`) is never a unit. A unit with fewer than `MIN_CONTENT_WORDS` content words ("ok, thanks") says too little
to be quoted on its own (a link's words do not count), and one opening with a bracket is an aside or the tail of a sentence cut
at an abbreviation ("Lowe et al. (2015) showed"); one longer than `MAX_UNIT_CHARS` is cut at a
word boundary, so a footnote stays readable and still quotes exact characters.

Ranking: BM25 over the question's content words (`runner.grounding.claim_support.content_tokens`) rather than
the document path's evidence score of one document, because the units come from several channels and
documents at once and BM25's length normalisation keeps a long table row from outranking a short
sentence that answers; only units with a positive score are evidence. As in the document path
(`runner.documents.evidence`), sentences of running text rank before those of reference lists,
tables and menus (`prose.is_mostly_prose` of their chunk), whose many names would otherwise match
every question, and before everything from a "References" (or "Bibliography", "Works Cited")
paragraph on, whose paper titles repeat the question's words without answering it. Ties (equal
scores) keep the order the sources were given in, then the position in the source, so the same input
gives the same ranking.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime

from runner.core.display_names import clean_name
from runner.documents.canonical import PageSpan
from runner.documents.evidence_chunks import chunk_document
from runner.documents.locators import make_locator
from runner.documents.policy import SourceQuality
from runner.documents.prose import (
    is_mostly_prose,
    is_prose,
    is_table_fragment,
    repeated_sentences,
)
from runner.documents.prose import sentence_spans as document_sentence_spans
from runner.grounding.bm25 import bm25_scores
from runner.grounding.citations import cut_span, sentence_spans
from runner.grounding.claim_support import content_tokens, prose_tokens
from runner.grounding.words import words
from runner.reports.sources import (
    NO_ATTRIBUTION,
    DocumentAttribution,
    DocumentSource,
    MessageSource,
    ReportSource,
)

MIN_CONTENT_WORDS = 4
# Distinct words of the question a unit must contain to count as evidence for it.
MIN_QUESTION_TERMS = 2
# A paragraph opening the list of works a document cites: what follows are titles, not claims.
_REFERENCES = re.compile(r"(?:^|\n\n)(?:References|Bibliography|Works Cited)\b", re.IGNORECASE)
QUESTION_WORDS = frozenset(
    "how what why who whom whose where when which is are does do did can could should would will "
    "anyone anybody".split()
)
MAX_UNIT_CHARS = 320
# Words that say how a question asks, not what it is about: in "summarize the discussion about
# the release" or "what did alice think about the release" the subject is the release, and a
# sentence that says "we discussed" or "I think" is no nearer to it.
ASKING_WORDS = frozenset(
    "summarize summarise summary discuss discussed discusses discussing discussion discussions "
    "talk talked talking talks think thinks thought thoughts say says said saying mention "
    "mentioned mentions suggest suggested suggestion opinion opinions view views group "
    "including regarding concerning".split()
)


@dataclass(frozen=True)
class ChannelMessage:
    """A message of a chosen channel at the revision read."""

    channel: str
    message_id: str  # external id
    revision: int
    author: str
    ts: datetime
    text: str  # normalized text of that revision
    row_id: int | None = None


@dataclass(frozen=True)
class DigestClaim:
    """A claim of a stored digest of a chosen channel (a decision, action item, open question,
    topic summary or synthesized knowledge item) and the external ids of the messages it cites.
    Claims are written by the digest pipeline, so a report cites the messages, never the claim."""

    kind: str
    text: str
    message_ids: tuple[str, ...]


@dataclass(frozen=True)
class DocumentText:
    """A chosen document's canonical text (and page spans for a PDF), its title (`shown_title`)
    and the URL it was fetched from, if any."""

    document_id: str
    title: str
    canonical_text: str
    source_text_hash: str
    page_spans: list[PageSpan] | None = None
    url: str | None = None
    # (locator, text) of the evidence snippets of a stored digest of this document for the
    # question (`runner.reports.digest_evidence`): the units, instead of its sentences.
    snippets: tuple[tuple[str, str], ...] = ()
    attribution: DocumentAttribution = NO_ATTRIBUTION  # byline and near-duplicate group
    # Its extraction's quality (`runner.documents.policy.estimate_quality`): LOW when degraded.
    quality: SourceQuality = SourceQuality.MEDIUM


def shown_title(title: str | None, canonical_text: str, document_id: str) -> str:
    """What a report calls a document: its stored title (its own, its first heading or its
    file's name), else its first line (a document stored before titles were derived, or text
    given without a name), else `document ID`."""
    first_line = canonical_text.lstrip().split("\n", 1)[0]
    # Stored titles are already one clean line (runner.documents.ingest.document_title).
    return clean_name(title or "") or clean_name(first_line) or f"document {document_id}"


@dataclass(frozen=True)
class Evidence:
    """One quotable unit: its exact text, the source that cites it, and where it comes from.

    A unit is a sentence of a message or a document, quoted by its one source, or a claim of a
    stored digest (`DigestClaim`), which rests on the messages it cites (`more_sources`)."""

    text: str
    source: ReportSource
    origin: str  # the channel (`#name`) or document title it belongs to
    origin_index: int  # order of the origin among the chosen sources
    position: int  # order of the unit within its origin
    prose: bool = True  # from running text (a document's reference list or table is not)
    kind: str = "sentence"  # or the digest claim's kind: decision, action_item, topic, ...
    more_sources: tuple[ReportSource, ...] = ()
    # Its source's quality: a document's extraction quality; a message is as written (MEDIUM,
    # the same as a document extracted without degradation).
    quality: SourceQuality = SourceQuality.MEDIUM

    @property
    def sources(self) -> tuple[ReportSource, ...]:
        """What a sentence made of this unit cites."""
        return (self.source, *self.more_sources)

    @property
    def is_question(self) -> bool:
        """Asks rather than tells: ends with `?`, or opens with a question word (chat often
        drops the mark: "how do i share a folder")."""
        opening = words(self.text[:40])
        return self.text.rstrip().endswith("?") or bool(opening and opening[0] in QUESTION_WORDS)


@dataclass(frozen=True)
class RankedEvidence:
    evidence: Evidence
    score: float
    serves: tuple[int, ...] = ()  # the sub-questions it was gathered for (`runner.reports.merge`)


def quotable_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """`text[start:end]` cut at `MAX_UNIT_CHARS`, or None when it is no statement to quote."""
    start, end = cut_span(text, start, end, MAX_UNIT_CHARS)
    # A link's words are no statement ("1 https://example.org/irc-disentanglement", a PDF's
    # footnote): only the words around it count.
    if len(prose_tokens(text[start:end])) < MIN_CONTENT_WORDS:
        return None
    if text[start] in "([{":  # an aside, or the tail of a citation cut at "et al. (2015)"
        return None
    return start, end


def message_evidence(messages: list[ChannelMessage], origin_index: int) -> list[Evidence]:
    """The quotable sentences of one channel's messages, in message order."""
    units: list[Evidence] = []
    for message in messages:
        for span in sentence_spans(message.text):
            quotable = quotable_span(message.text, *span)
            if quotable is None:
                continue
            start, end = quotable
            source = MessageSource(
                channel=message.channel,
                message_id=message.message_id,
                revision=message.revision,
                author=message.author,
                ts=message.ts,
                text=message.text,
                char_start=start,
                char_end=end,
                row_id=message.row_id,
            )
            units.append(
                Evidence(
                    message.text[start:end], source, f"#{message.channel}", origin_index, len(units)
                )
            )
    return units


def claim_evidence(
    claims: list[DigestClaim],
    messages: list[ChannelMessage],
    origin_index: int,
    first_positions: dict[str, int],
) -> list[Evidence]:
    """Units for a channel's digest claims: the claim's text, citing every message it rests on
    that the report read (whole, cut at `MAX_UNIT_CHARS`); a claim citing none of them, or
    saying too little, is skipped, and a claim repeated by several digests counts once. Its
    position is its first cited message's, so a section keeps the channel's order."""
    by_id = {message.message_id: message for message in messages}
    seen: set[str] = set()
    units: list[Evidence] = []
    for claim in claims:
        text = " ".join(claim.text.split())
        folded = text.casefold()
        cited = [by_id[i] for i in dict.fromkeys(claim.message_ids) if i in by_id]
        if not cited or folded in seen or len(content_tokens(text)) < MIN_CONTENT_WORDS:
            continue
        seen.add(folded)
        sources = [
            MessageSource(
                channel=m.channel,
                message_id=m.message_id,
                revision=m.revision,
                author=m.author,
                ts=m.ts,
                text=m.text,
                char_start=0,
                char_end=cut_span(m.text, 0, len(m.text), MAX_UNIT_CHARS)[1],
                row_id=m.row_id,
            )
            for m in cited
            if m.text.strip()
        ]
        if not sources:
            continue
        position = min(first_positions.get(m.message_id, 0) for m in cited)
        units.append(
            Evidence(
                text,
                sources[0],
                f"#{cited[0].channel}",
                origin_index,
                position,
                kind=claim.kind,
                more_sources=tuple(sources[1:]),
            )
        )
    return units


def document_evidence(document: DocumentText, origin_index: int) -> list[Evidence]:
    """The quotable sentences of a document, in document order, each with its locator; for a
    document with a stored digest's snippets, those snippets (`snippet_evidence`)."""
    if document.snippets:
        from runner.reports.digest_evidence import snippet_evidence  # it builds on this module

        return snippet_evidence(document, origin_index)
    text = document.canonical_text
    units: list[Evidence] = []
    in_references = False
    chunks = chunk_document(text, document.page_spans)
    # A running header or footer is on every page, and a table's cells are no statement.
    running = repeated_sentences(
        [
            chunk.text[s:e]
            for chunk in chunks
            for s, e in document_sentence_spans(chunk.text, 0, len(chunk))
        ]
    )
    for chunk in chunks:
        in_references = in_references or bool(_REFERENCES.search(chunk.text))
        prose = is_mostly_prose(chunk.text) and not in_references
        for relative_start, relative_end in document_sentence_spans(chunk.text, 0, len(chunk)):
            sentence = chunk.text[relative_start:relative_end]
            if is_table_fragment(sentence) or " ".join(sentence.casefold().split()) in running:
                continue
            quotable = quotable_span(chunk.text, relative_start, relative_end)
            if quotable is None:
                continue
            start, end = chunk.start + quotable[0], chunk.start + quotable[1]
            quote = text[start:end]
            locator = make_locator(text, start, end, quote, chunk.page, document.page_spans)
            source = DocumentSource(
                document.document_id,
                document.title,
                document.source_text_hash,
                locator,
                quote,
                document.url,
                document.attribution,
            )
            # A title or a byline in running text ("The Ubuntu Chat Corpus for ...") ranks with
            # the tables: it names the question's words without saying anything of them.
            units.append(
                Evidence(
                    quote,
                    source,
                    document.title,
                    origin_index,
                    len(units),
                    prose and is_prose(quote),
                    quality=document.quality,
                )
            )
    return units


def gather_evidence(
    channels: list[list[ChannelMessage]],
    documents: list[DocumentText],
    claims: list[list[DigestClaim]] | None = None,
) -> list[Evidence]:
    """Every quotable unit of the chosen channels (each a list of its messages, and of the
    claims of its digests, `claims[i]` for `channels[i]`) and documents, channels first, each
    in the order given."""
    units: list[Evidence] = []
    for index, messages in enumerate(channels):
        sentences = message_evidence(messages, index)
        units += sentences
        if claims is not None and claims[index]:
            first_positions: dict[str, int] = {}
            for unit in sentences:
                assert isinstance(unit.source, MessageSource)
                first_positions.setdefault(unit.source.message_id, unit.position)
            units += claim_evidence(claims[index], messages, index, first_positions)
    for index, document in enumerate(documents, start=len(channels)):
        units += document_evidence(document, index)
    return units


def named_authors(question: str, units: list[Evidence]) -> set[str]:
    """The authors of the channels' messages whose every name word the question names ("what
    did Barry Hughes think", "what did the project manager suggest"): the question asks what
    they said, so the writer weighs their messages more."""
    asked = set(content_tokens(question))
    authors = {u.source.author for u in units if isinstance(u.source, MessageSource)}
    named: set[str] = set()
    for author in authors:
        name = set(content_tokens(author))
        if name and len(named_terms(name, asked)) == len(name):
            named.add(author)
    return named


def question_terms(question: str) -> list[str]:
    """The words a unit must share with the question: its content words, without those that say
    how it asks (`ASKING_WORDS`), unless nothing else is left. The names of authors it asks
    about stay: a nick can be a word of the subject too ("ubuntu")."""
    tokens = content_tokens(question)
    return [token for token in tokens if token not in ASKING_WORDS] or tokens


def rank_evidence(question: str, units: list[Evidence]) -> list[RankedEvidence]:
    """Units with a positive BM25 score for the question (`question_terms`) that name at least
    two of its words (one, when no unit names two), best first (ties: input order); running text
    before reference lists and tables, as in the document path's evidence order."""
    # The question's content words only: "how do I ..." must not rank every chat question first
    # (bm25s's own stopword list keeps "how" and "get").
    query = question_terms(question)
    terms = set(query)
    scores = bm25_scores([unit.text for unit in units], " ".join(query))
    # One shared word is chance ("meta data" for a question about annotated data); evidence
    # must name at least `MIN_QUESTION_TERMS` of the question's words (all, if it has fewer).
    # When no unit names that many (a two-word subject that the sources say in other words), the
    # units naming one of them are the best the sources have, rather than no answer at all.
    order = sorted(range(len(units)), key=lambda i: (not units[i].prose, -scores[i], i))
    named = {i: _terms_named(terms, set(content_tokens(units[i].text))) for i in order}
    for needed in range(min(MIN_QUESTION_TERMS, len(terms)), 0, -1):
        ranked = [
            RankedEvidence(units[i], scores[i])
            for i in order
            if scores[i] > 0 and named[i] >= needed
        ]
        if ranked:
            return ranked
    return []


def _same_word(term: str, token: str) -> bool:
    """Equal, or one word in another form: both of 5+ letters sharing all but their last three
    ("approved" and "approves", "annotated" and "annotation"; not "data" and "database")."""
    if term == token:
        return True
    if min(len(term), len(token)) < 5:
        return False
    shared = len(os.path.commonprefix([term, token]))
    return shared >= 5 and shared >= min(len(term), len(token)) - 3


def _terms_named(terms: set[str], tokens: set[str]) -> int:
    """How many of the question's `terms` a unit's `tokens` name (`_same_word`)."""
    return len(named_terms(terms, tokens))


def named_terms(terms: set[str], tokens: set[str]) -> set[str]:
    """The question's `terms` that a unit's `tokens` name, each in any of its forms."""
    return {term for term in terms if term in tokens or any(_same_word(term, t) for t in tokens)}
