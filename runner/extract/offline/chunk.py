"""The map step without a model: one chunk → a ChunkSummary, by rules.

Every claim is a cleaned-up quote of its sentence and every pointer a span found in the text,
so the output passes the validator's support and pointer checks by construction. Within a chunk
a question counts as answered only by a later message of the same chunk; the digest step looks
again across the whole window (see offline.threads for the rule).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from runner.core.chunks import Chunk
from runner.core.contract import (
    ActionItem,
    Artifact,
    ChunkSummary,
    ContentPointer,
    Decision,
    KnowledgeItem,
    Link,
    OpenQuestion,
    SignalLevel,
    SignalQuality,
)
from runner.core.window import WindowMessage
from runner.extract.offline import patterns
from runner.extract.offline.artifacts import Snippet, find_snippets, snippet_title
from runner.extract.offline.item_model import ItemModel, KindModel, context_of, message_features
from runner.extract.offline.knowledge import (
    answer_item,
    link_description,
    snippet_knowledge,
    tip_item,
)
from runner.extract.offline.merge import count_phrase, signal_quality
from runner.extract.offline.overview import central_messages, excerpt
from runner.extract.offline.text import (
    PartView,
    content_words,
    squash,
    truncate_words,
    view_message,
    view_part,
)
from runner.extract.offline.threads import (
    Participants,
    find_answer,
    is_agreement,
    is_bare_assent,
    is_social,
    is_strong_agreement,
)
from runner.extract.offline.topics import topics_for

_PROPOSAL_HORIZON = 6
# Hosts whose links are reactions, not references.
_NOISE_HOSTS = ("giphy.com", "tenor.com", "media.giphy", "gfycat.com")


Item = TypeVar("Item", Decision, ActionItem, OpenQuestion, KnowledgeItem, Artifact)
Claimed = TypeVar("Claimed", Decision, ActionItem, OpenQuestion)  # the kinds a model decides


@dataclass
class _Ranked(Generic[Item]):
    """A found item with what ranks it: strength first, then its position in the chunk."""

    item: Item
    strength: int
    position: int


@dataclass
class _Found:
    decisions: list[_Ranked[Decision]] = field(default_factory=list)
    actions: list[_Ranked[ActionItem]] = field(default_factory=list)
    questions: list[_Ranked[OpenQuestion]] = field(default_factory=list)
    links: dict[str, Link] = field(default_factory=dict)
    snippets: list[tuple[Snippet, PartView, int]] = field(default_factory=list)
    knowledge: list[_Ranked[KnowledgeItem]] = field(default_factory=list)
    # question message id -> the Q&A knowledge item its rule-found answer made
    answers: dict[str, _Ranked[KnowledgeItem]] = field(default_factory=dict)


def _top(ranked: list[_Ranked[Item]], limit: int) -> list[Item]:
    """The `limit` strongest, returned in text order."""
    best = sorted(ranked, key=lambda r: (-r.strength, r.position))[:limit]
    return [r.item for r in sorted(best, key=lambda r: r.position)]


def _dedupe(ranked: list[_Ranked[Item]], text_of: Callable[[Item], str]) -> list[_Ranked[Item]]:
    """One entry per claim (same content words), the strongest."""
    kept: dict[str, _Ranked[Item]] = {}
    for entry in ranked:
        key = " ".join(content_words(text_of(entry.item)))
        if key not in kept or entry.strength > kept[key].strength:
            kept[key] = entry
    return list(kept.values())


def add_links(links: dict[str, Link], view: PartView, participants: Participants) -> None:
    """Record the links of a message part in `links` (by URL without a trailing slash): a new
    URL with what it is about (`link_description`), a known one with one more citing message
    (at most the contract's 10). Animated-GIF hosts are noise, not links."""
    for url in view.urls:
        if any(host in url.text.casefold() for host in _NOISE_HOSTS):
            continue
        key = url.text.rstrip("/")
        known = links.get(key)
        if known is not None:
            if view.message_id not in known.message_ids and len(known.message_ids) < 10:
                known.message_ids.append(view.message_id)
            continue
        links[key] = Link(
            url=url.text[:2048],
            description=link_description(view, url, participants),
            message_ids=[view.message_id],
        )


class _ChunkReader:
    def __init__(self, chunk: Chunk) -> None:
        self.views = [view_part(part) for part in chunk.parts]
        seen: dict[str, WindowMessage] = {}
        for part in chunk.parts:
            seen.setdefault(part.message.message_id, part.message)
        self.messages: list[WindowMessage] = list(seen.values())
        self.index = {m.message_id: i for i, m in enumerate(self.messages)}
        self.participants = Participants.of(self.messages)
        self.found = _Found()

    def read(self) -> None:
        for position, view in enumerate(self.views):
            self._decisions(view, position)
            self._actions(view, position)
            self._question(view, position)
            self._links(view)
            self._snippets(view, position)
            self._tips(view, position)

    def _decisions(self, view: PartView, position: int) -> None:
        mid = view.message_id
        for sentence in view.sentences:
            claim = patterns.decision(sentence.text, self.participants)
            if claim is not None and not patterns.firm_decision(sentence.text):
                # "then i decided to reformat", "the kernel just decided to start working": decision
                # words in one person's story, not something a group settled.
                claim = None
            ids = [mid]
            if claim is None:
                claim = patterns.proposal(sentence.text, self.participants)
                if claim is None or is_social(sentence.text):
                    continue
                agreeing = self._agreements(view.message)
                if not agreeing:
                    continue
                ids += agreeing
            target = view.message.reply_to
            if target in self.index and target not in ids:
                ids.append(target)
            decision = Decision(text=claim.text, message_ids=ids[:20])
            self.found.decisions.append(_Ranked(decision, claim.strength, position))

    def _agreements(self, message: WindowMessage) -> list[str]:
        """Later messages of the chunk by others that agree with `message`."""
        start = self.index[message.message_id] + 1
        agreeing: list[str] = []
        for offset, later in enumerate(self.messages[start : start + _PROPOSAL_HORIZON]):
            if later.author == message.author or not is_agreement(later.normalized_text):
                continue
            text = later.normalized_text
            replies = later.reply_to == message.message_id
            addressed = self.participants.addressee(text) == message.author
            # An unaddressed "+1" agrees with the proposal only right after it; a bare "ok"
            # only as the very next message.
            free = later.reply_to is None and self.participants.addressee(text) is None
            nearby = (offset < 2 and is_strong_agreement(text)) or (
                offset == 0 and is_bare_assent(text)
            )
            if replies or addressed or (free and nearby):
                agreeing.append(later.message_id)
        return agreeing

    def _actions(self, view: PartView, position: int) -> None:
        mid = view.message_id
        claimed = False
        for sentence in view.sentences:
            claim = patterns.action(sentence.text, view.author, self.participants)
            if claim is None:
                continue
            claimed = True
            item = ActionItem(text=claim.text, owner=_owner(claim.owner), message_ids=[mid])
            self.found.actions.append(_Ranked(item, claim.strength, position))
        if patterns.commitment_only(view.prose):
            self._taken_request(view, position)
        elif not claimed and patterns.takes_advice(view.prose, self.participants):
            self._taken_advice(view, position)

    def _advice_to(self, message: WindowMessage) -> WindowMessage | None:
        """The suggestion `message` takes up: the message it replies to; else, among the few
        messages before it by others that address its author or nobody (only the person it
        addresses, when it addresses one), the latest that suggests something, else the latest
        addressed to its author. A message that neither suggests nor speaks to the author is
        not advice ("the mirror is slow today" ... "I'll try it now")."""
        if message.reply_to in self.index:
            target = self.messages[self.index[message.reply_to]]
            return target if target.author != message.author else None
        start = self.index[message.message_id]
        to = patterns.addressed_to(message.normalized_text, self.participants)
        earlier: list[tuple[WindowMessage, str | None]] = [
            (m, patterns.addressed_to(m.normalized_text, self.participants))
            for m in reversed(self.messages[max(0, start - _PROPOSAL_HORIZON) : start])
            if m.author != message.author and (to is None or m.author == to)
        ]
        earlier = [(m, named) for m, named in earlier if named in (None, message.author)]
        for m, named in earlier:
            if (named == message.author or to is not None) and self._suggests(m):
                return m
        for m, _named in earlier:
            if self._suggests(m):
                return m
        return next((m for m, named in earlier if named == message.author), None)

    def _suggests(self, message: WindowMessage) -> bool:
        return any(
            patterns.is_suggestion(s.text, self.participants)
            for s in view_message(message).sentences
        )

    def _taken_advice(self, view: PartView, position: int) -> None:
        """ "I'll try that now" / "ok will do": an action item of the author whose task is the
        suggestion taken up, citing the suggestion and the acceptance."""
        message = view.message
        advice = self._advice_to(message)
        if advice is None:
            return
        if self._joined_action(advice, message):
            return
        sentences = [s.text for s in view_message(advice).sentences if not is_social(s.text)]
        suggested = [s for s in sentences if patterns.is_suggestion(s, self.participants)]
        chosen = max(suggested or sentences, key=lambda s: len(content_words(s)), default="")
        claim = patterns.clean_claim(patterns.suggested_task(chosen, self.participants))
        self._add_taken_action(claim, advice, message, position)

    def _add_taken_action(
        self, claim: str, source: WindowMessage, taker: WindowMessage, position: int
    ) -> None:
        """`taker`'s action item whose task is `claim`, taken from `source` (both cited), when
        the claim keeps two content words."""
        if len(content_words(claim)) < 2:
            return
        item = ActionItem(
            text=claim,
            owner=_owner(taker.author),
            message_ids=[source.message_id, taker.message_id],
        )
        self.found.actions.append(_Ranked(item, 2, position))

    def _joined_action(self, source: WindowMessage, taker: WindowMessage) -> bool:
        """When an action item already cites `source`, `taker` joins it (cited, and its owner
        unless it has one): True; else False."""
        for ranked in self.found.actions:
            action = ranked.item
            if source.message_id in action.message_ids:
                if len(action.message_ids) < 20:
                    action.message_ids.append(taker.message_id)
                action.owner = action.owner or _owner(taker.author)
                return True
        return False

    def _taken_request(self, view: PartView, position: int) -> None:
        """ "On it" / "I'll take it": the task is the request it answers."""
        message = view.message
        request: WindowMessage | None = None
        if message.reply_to in self.index:
            request = self.messages[self.index[message.reply_to]]
        else:
            for earlier in reversed(self.messages[: self.index[message.message_id]][-3:]):
                if earlier.author != message.author:
                    request = earlier
                    break
        if request is None:
            return
        if self._joined_action(request, message):
            return
        sentences = [s.text for s in view_message(request).sentences]
        asking = [s for s in sentences if s.endswith("?")] or [
            s for s in sentences if "need" in s.casefold()
        ]
        if not asking:
            return
        claim = patterns.clean_claim(patterns.strip_request(asking[0]))
        self._add_taken_action(claim, request, message, position)

    def _question(self, view: PartView, position: int) -> None:
        """The strongest question of a part; answered in the chunk → Q&A knowledge."""
        best: tuple[int, str] | None = None
        for i, sentence in enumerate(view.sentences):
            # A question that is an action item ("can you review X?") is the action's; asked
            # second, as most sentences are no question and the action rules cost more.
            claim = patterns.question(sentence.text, self.participants)
            if claim is None or patterns.action(sentence.text, view.author, self.participants):
                continue
            text = claim.text
            previous = view.sentences[i - 1].text if i > 0 else ""
            if len(content_words(text)) < 6 and len(content_words(previous)) >= 3:
                text = patterns.clean_claim(previous + " " + sentence.text)
            if best is None or claim.strength > best[0]:
                best = (claim.strength, text)
        if best is None:
            return
        strength, text = best
        messages = self.messages
        answer = find_answer(
            messages, self.index[view.message_id], self.participants, view.message.normalized_text
        )
        item = OpenQuestion(text=text, asked_by=_owner(view.author), message_ids=[view.message_id])
        if answer is None:
            self.found.questions.append(_Ranked(item, strength, position))
            return

        knowledge = answer_item(view.message, text, answer, self.participants)
        if knowledge is not None:
            ranked = _Ranked(knowledge, 2, position)
            self.found.knowledge.append(ranked)
            self.found.answers[view.message_id] = ranked

    def _links(self, view: PartView) -> None:
        add_links(self.found.links, view, self.participants)

    def _snippets(self, view: PartView, position: int) -> None:
        for snippet in find_snippets(view):
            self.found.snippets.append((snippet, view, position))
            if snippet.reusable:
                previous = self._previous_by_author(view.message)
                item = snippet_knowledge(snippet, view, previous)
                self.found.knowledge.append(_Ranked(item, 3, position))

    def _previous_by_author(self, message: WindowMessage) -> str:
        for earlier in reversed(self.messages[: self.index[message.message_id]][-4:]):
            if earlier.author == message.author:
                return earlier.normalized_text
        return ""

    def _tips(self, view: PartView, position: int) -> None:
        for sentence in view.sentences:
            item = tip_item(sentence.text, view, self.participants)
            if item is not None:
                strength = 3 if patterns.TIP_MARKER.match(squash(sentence.text)) else 1
                self.found.knowledge.append(_Ranked(item, strength, position))


def _owner(name: str | None) -> str | None:
    return name[:120] if name else None


def _artifacts(snippets: list[tuple[Snippet, PartView, int]]) -> list[Artifact]:
    ranked = [
        _Ranked(
            Artifact(
                kind=snippet.kind,
                title=snippet_title(snippet, view),
                language=snippet.language[:40] if snippet.language else None,
                pointer=ContentPointer(
                    message_id=view.message_id,
                    char_start=snippet.span.start,
                    char_end=snippet.span.end,
                    quote=snippet.span.text,
                ),
            ),
            2 if snippet.reusable else 1,
            position,
        )
        for snippet, view, position in snippets
    ]
    return _top(ranked, 10)


def coverage_line(messages: Sequence[WindowMessage]) -> str:
    """The first sentence of every offline chunk summary; the digest step parses it back."""
    first = json.dumps(messages[0].message_id, ensure_ascii=False)
    last = json.dumps(messages[-1].message_id, ensure_ascii=False)
    return f"Covers {len(messages)} messages from {first} to {last}."


def _gate(
    ranked: list[_Ranked[Claimed]],
    model: KindModel,
    probabilities: dict[str, float],
    propose: Callable[[str, float], _Ranked[Claimed] | None],
) -> list[_Ranked[Claimed]]:
    """The learned decision for one kind: the rules' items whose message the model accepts, and
    in the "propose" mode an item for every accepted message the rules left out (`propose`
    builds it from the message's own sentence, so it stays a grounded quote)."""
    kept = [r for r in ranked if probabilities.get(r.item.message_ids[0], 0.0) >= model.threshold]
    covered = {r.item.message_ids[0] for r in kept}
    for message_id, probability in probabilities.items():
        if model.propose and probability >= model.threshold and message_id not in covered:
            proposed = propose(message_id, probability)
            if proposed is not None:
                kept.append(proposed)
    return kept


def _best_sentence(view: PartView, pick: Callable[[str], bool]) -> str | None:
    """The first sentence `pick` accepts, else the one with the most content words."""
    sentences = [s.text for s in view.sentences]
    chosen = next((s for s in sentences if pick(s)), None)
    if chosen is None and sentences:
        chosen = max(sentences, key=lambda s: len(content_words(s)))
    if chosen is None:
        return None
    claim = patterns.clean_claim(chosen)
    return claim if len(content_words(claim)) >= 2 else None


class _Proposer:
    """Items for messages the model accepts and the rules did not phrase."""

    def __init__(self, reader: _ChunkReader) -> None:
        self.reader = reader
        self.views: dict[str, PartView] = {}
        self.positions: dict[str, int] = {}
        for position, view in enumerate(reader.views):  # a message's first part
            self.views.setdefault(view.message_id, view)
            self.positions.setdefault(view.message_id, position)

    def _view(self, message_id: str) -> PartView | None:
        return self.views.get(message_id)

    def decision(self, message_id: str, probability: float) -> _Ranked[Decision] | None:
        view = self._view(message_id)
        people = self.reader.participants
        if view is None:
            return None
        text = _best_sentence(
            view,
            lambda s: bool(patterns.decision(s, people) or patterns.proposal(s, people)),
        )
        if text is None:
            return None
        return _Ranked(
            Decision(text=text, message_ids=[message_id]),
            int(probability * 10),
            self.positions[message_id],
        )

    def action(self, message_id: str, probability: float) -> _Ranked[ActionItem] | None:
        view = self._view(message_id)
        people = self.reader.participants
        if view is None:
            return None
        claims = [patterns.action(s.text, view.author, people) for s in view.sentences]
        claim = next((c for c in claims if c is not None), None)
        text = claim.text if claim else _best_sentence(view, lambda s: "?" not in s)
        if text is None:
            return None
        owner = (claim.owner if claim else None) or people.addressee(view.prose) or view.author
        item = ActionItem(text=text, owner=_owner(owner), message_ids=[message_id])
        return _Ranked(item, int(probability * 10), self.positions[message_id])

    def question(self, message_id: str, probability: float) -> _Ranked[OpenQuestion] | None:
        view = self._view(message_id)
        if view is None:
            return None
        text = _best_sentence(view, lambda s: s.rstrip().endswith("?"))
        if text is None:
            return None
        item = OpenQuestion(text=text, asked_by=_owner(view.author), message_ids=[message_id])
        return _Ranked(item, int(probability * 10), self.positions[message_id])


def _apply_model(reader: _ChunkReader, model: ItemModel) -> None:
    gated = {kind: model.gated(kind) for kind in ("decisions", "action_items", "open_questions")}
    if not any(gated.values()):
        return
    context = context_of(reader.messages, reader.participants)
    features = [message_features(context, i) for i in range(len(reader.messages))]
    proposer = _Proposer(reader)
    found = reader.found

    def probabilities(kind_model: KindModel) -> dict[str, float]:
        return {
            m.message_id: kind_model.probability(f)
            for m, f in zip(reader.messages, features, strict=True)
        }

    if (decisions := gated["decisions"]) is not None:
        found.decisions = _gate(
            found.decisions, decisions, probabilities(decisions), proposer.decision
        )
    if (actions := gated["action_items"]) is not None:
        found.actions = _gate(found.actions, actions, probabilities(actions), proposer.action)
    if (questions := gated["open_questions"]) is not None:
        found.questions = _gate(
            found.questions, questions, probabilities(questions), proposer.question
        )
        # A question the model holds open is not also a Q&A item of a rule-found answer.
        still_open = {q.item.message_ids[0] for q in found.questions}
        answers = [found.answers[m] for m in still_open if m in found.answers]
        found.knowledge = [k for k in found.knowledge if not any(k is a for a in answers)]


def summarize_chunk(chunk: Chunk, model: ItemModel | None = None) -> ChunkSummary:
    """The offline map step (see the module docstring). `model` decides the kinds it gates
    (runner/extract/offline/item_model.py); None: the rules alone."""
    reader = _ChunkReader(chunk)
    if not reader.messages:
        return ChunkSummary(
            chunk_summary="",
            signal_quality=SignalQuality(level=SignalLevel.EMPTY, reason="empty chunk"),
        )
    reader.read()
    if model is not None:
        _apply_model(reader, model)
    found = reader.found
    decisions = _top(_dedupe(found.decisions, lambda d: d.text), 5)
    actions = _top(_dedupe(found.actions, lambda a: a.text), 8)
    questions = _top(_dedupe(found.questions, lambda q: q.text), 6)
    knowledge = _top(found.knowledge, 15)
    keyed = [k.model_copy(update={"key": f"K{i}"}) for i, k in enumerate(knowledge, start=1)]
    artifacts = _artifacts(found.snippets)
    links = list(found.links.values())[:15]
    counts = {
        "decisions": len(decisions),
        "action items": len(actions),
        "open questions": len(questions),
        "links": len(links),
        "artifacts": len(artifacts),
        "knowledge items": len(keyed),
    }
    substantive = [v for v in reader.views if len(v.prose_words) >= 4 and not is_social(v.prose)]
    names = frozenset(reader.participants.by_key)
    topics = topics_for(reader.views, 6, names) if len(substantive) >= 3 else []
    signal = signal_quality(counts, bool(topics), high=12, medium=5)
    id_lists = [
        *(d.message_ids for d in decisions),
        *(a.message_ids for a in actions),
        *(k.message_ids for k in keyed),
        *(q.message_ids for q in questions),
    ]
    cited = [ids[0] for ids in id_lists if ids]
    central = central_messages(reader.views, set(cited), 4)
    notable_set = set(cited[:10]) | {c.view.message_id for c in central}
    notable = [m.message_id for m in reader.messages if m.message_id in notable_set][:10]
    if signal.level == SignalLevel.EMPTY:
        notable = []  # nothing in this chunk is worth pointing a reader to
    text = coverage_line(reader.messages)
    authors = list(dict.fromkeys(m.author for m in reader.messages))
    text += f" Participants: {', '.join(authors[:8])}{' and others' if len(authors) > 8 else ''}."
    if any(counts.values()):
        text += f" Found {count_phrase(counts)}."
    points = [excerpt(c.view, reader.participants, 200) for c in central[:3]]
    if points:
        text += " Key points: " + " | ".join(points)
    return ChunkSummary(
        chunk_summary=truncate_words(text, 1200),
        signal_quality=signal,
        topics=topics,
        decisions=decisions,
        action_items=actions,
        open_questions=questions,
        links=links,
        artifacts=artifacts,
        knowledge_items=keyed,
        notable_message_ids=notable,
    )
