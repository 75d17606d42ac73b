"""The offline digest's cited prose: an extractive overview (what the channel discussed,
decided and left open) and highlights, every sentence citing the messages it comes from.

Each sentence is made of a message's own words (a central message's opening, a decision's or
question's text) or of topic phrases that occur in the messages it cites, under a short frame
("Decided:") that says what it is. A frame is a word or two the cited messages may not hold,
so a sentence is proposed with its frame only when it still passes the validator's overlap
rule at its default share (`PROPOSE_SHARE`); otherwise without the frame, otherwise not at all:
the offline extractor proposes nothing the validator would have to drop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from runner.core.contract import (
    ActionItem,
    CitedSentence,
    Decision,
    KnowledgeItem,
    OpenQuestion,
    Topic,
)
from runner.core.window import WindowMessage
from runner.extract.offline.importance import worth_quoting
from runner.extract.offline.overview import Central, excerpt
from runner.extract.offline.text import squash, truncate_words, view_message
from runner.extract.offline.threads import Participants, strip_address
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP as PROPOSE_SHARE
from runner.grounding.claim_support import content_tokens, share_in, support_share

_MAX_IDS = 8
_SENTENCE_CHARS = 300
_CENTRAL_SENTENCES = 3
_MIN_CENTRAL_WORDS = 5
_EXCHANGE_CHARS = 200
_MIN_EXCHANGE_WORDS = 3
NOT_PROSE = re.compile(r"```|[0-9a-fA-F]{24,}")
_OVERVIEW_SENTENCES = 12  # the contract's cap


def _join(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


class ProseWriter:
    """Cited sentences over one window (`by_id`: the window's messages by external id)."""

    def __init__(self, by_id: Mapping[str, WindowMessage], participants: Participants) -> None:
        self.by_id = by_id
        self.participants = participants

    def cite(self, variants: Sequence[str], message_ids: Sequence[str]) -> CitedSentence | None:
        """The first of `variants` (framed first, bare last) its cited messages support."""
        known = [m for m in dict.fromkeys(message_ids) if m in self.by_id]
        for variant in variants:
            text = truncate_words(squash(variant), _SENTENCE_CHARS)
            # A message sharing no word with the sentence (a "+1") is no source of it.
            ids = [m for m in known if support_share(text, [self.by_id[m].normalized_text])]
            ids = ids[:_MAX_IDS]
            share = support_share(text, [self.by_id[m].normalized_text for m in ids])
            if ids and share is not None and share >= PROPOSE_SHARE:
                return CitedSentence(sentence=text, message_ids=ids)
        return None

    def discussed(self, topics: Sequence[Topic]) -> CitedSentence | None:
        named = [t for t in topics if t.message_ids][:3]
        if not named:
            return None
        names = [t.title for t in named]
        ids = [m for t in named for m in t.message_ids[:2]]
        return self.cite(
            [f"The discussion was mainly about {_join(names)}.", f"Discussed: {_join(names)}."],
            ids,
        )

    def central(self, item: Central) -> CitedSentence | None:
        text = excerpt(item.view, self.participants)
        if len(set(content_tokens(text))) < _MIN_CENTRAL_WORDS or NOT_PROSE.search(text):
            return None  # "ok, I will have a go now, thanks" or a hash tells a reader nothing
        return self.cite([f"{item.view.author}: {text}", text], [item.view.message_id])

    def exchange(self, opening: WindowMessage, answer: WindowMessage | None) -> list[CitedSentence]:
        """One conversation in a sentence or two: what its opener asked (or said), quoted, and
        the first answer in it, quoted; each cites its own message."""
        # Its prose (code blocks and commands left out), without its addressee.
        asked = excerpt(view_message(opening), self.participants, _EXCHANGE_CHARS)
        if len(set(content_tokens(asked))) < _MIN_EXCHANGE_WORDS or NOT_PROSE.search(asked):
            return []  # a paste or a hash says nothing in a sentence
        verb = "asked" if "?" in asked else "wrote"
        sentences = [self.cite([f"{opening.author} {verb}: {asked}", asked], [opening.message_id])]
        if answer is not None:
            reply = truncate_words(
                strip_address(squash(answer.normalized_text), self.participants), _EXCHANGE_CHARS
            )
            # An answer that is only a link or a paste says nothing in a sentence either.
            if len(set(content_tokens(reply))) >= _MIN_EXCHANGE_WORDS:
                sentences.append(
                    self.cite([f"{answer.author} answered: {reply}", reply], [answer.message_id])
                )
        return [sentence for sentence in sentences if sentence is not None]

    def dated(self, day: str, opening: WindowMessage) -> CitedSentence | None:
        """One day of a multi-day window in a sentence: `day`, then what its most important
        conversation's opener asked (or said), quoted; None when no dated variant is supported."""
        asked = excerpt(view_message(opening), self.participants, _EXCHANGE_CHARS)
        if len(set(content_tokens(asked))) < _MIN_EXCHANGE_WORDS or NOT_PROSE.search(asked):
            return None
        verb = "asked" if "?" in asked else "wrote"
        return self.cite(
            [f"{day}: {opening.author} {verb}: {asked}", f"{day}: {asked}"], [opening.message_id]
        )

    def overview(
        self,
        topics: Sequence[Topic],
        central: Sequence[Central],
        order: Mapping[str, int],
        decisions: Sequence[Decision],
        questions: Sequence[OpenQuestion],
        exchanges: Sequence[tuple[WindowMessage, WindowMessage | None]] = (),
        others: CitedSentence | None = None,
        days: Sequence[CitedSentence] = (),
    ) -> list[CitedSentence]:
        """Discussed, decided (two decisions), left open (two questions). Discussed is, for a
        threaded window, its largest conversations (`exchanges`: what each opener asked and the
        first answer; `days`: for a window of several days, one dated sentence per day after
        them; `others`: how many other conversations there were); otherwise the topics, then
        the most central messages in window order."""
        # A message a decision or question below already cites is not repeated as discussed.
        later = {d.message_ids[0] for d in decisions[:2]} | {
            q.message_ids[0] for q in questions[:2]
        }
        fresh = [c for c in central if c.view.message_id not in later and self.central(c)]
        picked = sorted(fresh[:_CENTRAL_SENTENCES], key=lambda c: order.get(c.view.message_id, 0))
        discussed: list[CitedSentence | None] = [
            sentence for opening, answer in exchanges for sentence in self.exchange(opening, answer)
        ]
        if not discussed and (central or not exchanges and others is None):
            discussed = [self.discussed(topics), *(self.central(item) for item in picked)]
        discussed.extend(days)
        discussed.append(others)
        candidates = [
            *discussed,
            *(self.cite([f"Decided: {d.text}", d.text], d.message_ids) for d in decisions[:2]),
            *(self.question(q) for q in questions[:2]),
        ]
        unique: dict[str, CitedSentence] = {}
        for sentence in candidates:
            if sentence is not None:
                unique.setdefault(sentence.sentence.casefold(), sentence)
        return list(unique.values())[:_OVERVIEW_SENTENCES]

    def question(self, question: OpenQuestion) -> CitedSentence | None:
        asker = f" ({question.asked_by})" if question.asked_by else ""
        return self.cite(
            [f"Left open{asker}: {question.text}", f"Left open: {question.text}", question.text],
            question.message_ids,
        )

    def action(self, action: ActionItem) -> CitedSentence | None:
        framed = f"Action for {action.owner}: {action.text}" if action.owner else ""
        return self.cite(
            [v for v in (framed, f"Action: {action.text}", action.text) if v], action.message_ids
        )

    def highlights(
        self,
        decisions: Sequence[Decision],
        actions: Sequence[ActionItem],
        questions: Sequence[OpenQuestion],
        knowledge: Sequence[KnowledgeItem],
    ) -> list[CitedSentence]:
        owned = sorted(actions, key=lambda a: a.owner is None)
        candidates = [
            *(self.cite([f"Decision: {d.text}", d.text], d.message_ids) for d in decisions[:2]),
            *(self.action(a) for a in owned[:2]),
            *(self.question(q) for q in questions[:1]),
        ]
        verbatim = [
            k
            for k in knowledge
            if k.content_pointer is not None and worth_quoting(k.content_pointer.quote)
        ]
        if verbatim:
            item = verbatim[0]
            assert item.content_pointer is not None
            ids = [item.content_pointer.message_id, *item.message_ids]
            candidates.append(self.cite([f"Snippet: {item.title}", item.title], ids))
        kept: list[CitedSentence] = []
        seen: set[str] = set()
        for sentence in candidates:
            # One message told once: "I'll stay away from X" is not a decision and an action.
            if sentence is not None and sentence.message_ids[0] not in seen:
                seen.add(sentence.message_ids[0])
                kept.append(sentence)
        return kept[:5]


def window_keywords(candidates: Sequence[str], window_words: set[str]) -> list[str]:
    """The candidates made of the window's words (the validator's rule), at most 10."""
    kept: dict[str, None] = {}
    for keyword in candidates:
        share = share_in(keyword, window_words)
        if share is not None and share >= PROPOSE_SHARE:
            kept.setdefault(keyword, None)
    return list(kept)[:10]
