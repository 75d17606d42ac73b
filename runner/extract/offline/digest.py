"""The reduce step without a model: chunk summaries + the window → one Digest.

Items are merged across chunks (same claim text, URL, pointer span or quote → one item with the
union of citations), open questions are checked again against the whole window (an answer in a
later chunk closes them and becomes a Q&A knowledge item), lists are ranked and cut to the
contract's limits, and the overview is extractive and cited (offline.prose): topics and the
most central messages of the window, then decisions and what was left open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from runner.core.contract import (
    ActionItem,
    Artifact,
    ArtifactKind,
    CitedSentence,
    Coverage,
    Decision,
    Digest,
    KnowledgeItem,
    Link,
    OpenQuestion,
    SignalLevel,
    SignalQuality,
)
from runner.core.merge import (
    MergeRules,
    merge_action_items,
    merge_artifacts,
    merge_decisions,
    merge_knowledge,
    merge_links,
)
from runner.core.vocabulary import MappedChunk
from runner.core.window import Window, WindowMessage
from runner.extract.offline.chunk import add_links
from runner.extract.offline.exchanges import exchange, opening_of
from runner.extract.offline.importance import (
    informative_opening,
    is_noise,
    names_its_subject,
    personal_plan,
)
from runner.extract.offline.item_model import (
    ItemContext,
    ItemModel,
    KindModel,
    context_of,
    message_features,
)
from runner.extract.offline.knowledge import answer_item
from runner.extract.offline.merge import (
    even_sample,
    link_knowledge,
    rank_and_cut,
    signal_quality,
)
from runner.extract.offline.overview import central_messages
from runner.extract.offline.patterns import ACTION_MARKER, DECISION_MARKER, firm_decision
from runner.extract.offline.prose import NOT_PROSE, ProseWriter, window_keywords
from runner.extract.offline.text import content_words, squash, truncate_words, view_message
from runner.extract.offline.threads import Participants, find_answer
from runner.extract.offline.topics import RankedConversation, ranked_for, topics_for
from runner.grounding.claim_support import token_set

Item = TypeVar("Item", Decision, ActionItem, OpenQuestion, Link, Artifact, KnowledgeItem)


# A decision restated within this many messages, sharing this share of the shorter one's
# content words, is the same decision refined (see _Merger.restated).
_RESTATED_HORIZON = 30
_RESTATED_SHARE = 0.6


class _Merger:
    """The window and its chunk summaries, merged one item list at a time."""

    def __init__(
        self, chunks: Sequence[MappedChunk], window: Window, open_model: KindModel | None = None
    ) -> None:
        self.open_model = open_model
        self.context: ItemContext | None = None
        self.chunks = chunks
        self.summaries = [chunk.summary for chunk in chunks]
        self.window = window
        self.messages = list(window.messages)
        self.order = {m.message_id: i for i, m in enumerate(self.messages)}
        self.by_id = {m.message_id: m for m in self.messages}
        self.participants = Participants.of(self.messages)
        self.omitted: dict[str, tuple[int, int]] = {}  # list name → (kept, found)

    def position(self, message_ids: Sequence[str]) -> int:
        return min((self.order.get(m, len(self.order)) for m in message_ids), default=0)

    def cut(
        self, name: str, items: list[Item], limit: int, strength: Callable[[Item], int]
    ) -> list[Item]:
        """`items` cut to `limit` (strongest first, earliest among equals), in window order;
        what was cut is counted for the coverage notes."""
        kept = rank_and_cut(items, limit, strength, lambda i: self.position(_ids(i)))
        if len(items) > len(kept):
            self.omitted[name] = (len(kept), len(items))
        return kept

    def every(self, field_name: str) -> list[Any]:
        return [item for summary in self.summaries for item in getattr(summary, field_name)]

    def restated(self, decisions: list[Decision]) -> list[Decision]:
        """A decision restated a little later with most of its words (the thread refined a
        proposal: "let's retry 5 times" → "retry 5 times with jitter") is one decision: the
        later wording, citing both. Only `_RESTATED_HORIZON` messages ahead are compared."""
        ordered = sorted(decisions, key=lambda d: self.position(d.message_ids))
        words = [set(content_words(d.text)) for d in ordered]
        positions = [self.position(d.message_ids) for d in ordered]
        kept: list[Decision | None] = list(ordered)
        for i, earlier in enumerate(ordered):
            for j in range(i + 1, len(ordered)):
                if positions[j] - positions[i] > _RESTATED_HORIZON:
                    break
                shared = len(words[i] & words[j]) / max(1, min(len(words[i]), len(words[j])))
                later = kept[j]
                if later is not None and shared >= _RESTATED_SHARE:
                    ids = list(dict.fromkeys([*earlier.message_ids, *later.message_ids]))
                    kept[j] = later.model_copy(update={"message_ids": ids[:20]})
                    kept[i] = None
                    break
        return [d for d in kept if d is not None]

    def decisions(self) -> list[Decision]:
        merged = self.restated(merge_decisions(self.every("decisions"), OFFLINE_RULES))

        def strength(item: Decision) -> int:
            source = self.by_id.get(item.message_ids[0])
            marked = source is not None and DECISION_MARKER.search(source.normalized_text)
            return 3 if marked else 1 + min(len(item.message_ids), 3)

        return self.cut("decisions", merged, 25, strength)

    def actions(self) -> list[ActionItem]:
        merged = merge_action_items(self.every("action_items"), OFFLINE_RULES)

        def strength(item: ActionItem) -> int:
            source = self.by_id.get(item.message_ids[0])
            marked = source is not None and ACTION_MARKER.search(source.normalized_text)
            return (2 if marked else 0) + (1 if item.owner else 0)

        return self.cut("action items", merged, 40, strength)

    def still_open(self, message_id: str) -> bool:
        """The model's reading of the whole window: is this question still open?"""
        assert self.open_model is not None
        if self.context is None:
            self.context = context_of(self.messages)
        features = message_features(self.context, self.order[message_id])
        return self.open_model.accepts(features)

    def questions(self, knowledge: list[KnowledgeItem]) -> list[OpenQuestion]:
        """Candidates still unanswered in the whole window; answered ones become Q&A items."""
        open_items: dict[str, OpenQuestion] = {}
        seen_texts: set[str] = set()
        answered_ids = {k.message_ids[0] for k in knowledge if k.content and k.message_ids}
        known_content = {_key(k.content) for k in knowledge if k.content}
        for summary in self.summaries:
            for item in summary.open_questions:
                asked = item.message_ids[0]
                text_key = _key(item.text)
                if asked in answered_ids or asked not in self.order or text_key in seen_texts:
                    continue
                seen_texts.add(text_key)
                question = self.by_id[asked]
                answer = find_answer(
                    self.messages, self.order[asked], self.participants, question.normalized_text
                )
                if answer is None:
                    # Unanswered; a model deciding open questions judges it in the whole window.
                    if self.open_model is None or self.still_open(asked):
                        open_items[asked] = item
                    continue
                qa = answer_item(self.by_id[asked], item.text, answer, self.participants)
                if qa is not None and _key(qa.content or "") not in known_content:
                    knowledge.append(qa)
                    known_content.add(_key(qa.content or ""))
                    answered_ids.add(asked)
        items = list(open_items.values())
        return self.cut("open questions", items, 30, lambda q: len(set(content_words(q.text))))

    def links(self) -> list[Link]:
        """Every distinct link of the window, read from all its messages (a chunk summary keeps
        at most the contract's 15), cut to the digest's 60 with "N of M" in the notes."""
        found: dict[str, Link] = {}
        for message in self.messages:
            if "://" in message.normalized_text:  # what `view_message` would find a URL in
                add_links(found, view_message(message), self.participants)
        merged = merge_links([*found.values(), *self.every("links")], OFFLINE_RULES)
        return self.cut("links", merged, 60, lambda link: len(link.message_ids))

    def artifacts(self) -> list[Artifact]:
        merged = merge_artifacts(self.every("artifacts"), OFFLINE_RULES)
        reusable = (ArtifactKind.CODE, ArtifactKind.CONFIG, ArtifactKind.COMMAND)
        return self.cut("artifacts", merged, 40, lambda a: int(a.kind in reusable))

    def knowledge(self) -> list[KnowledgeItem]:
        return merge_knowledge(self.every("knowledge_items"), OFFLINE_RULES)

    def coverage_ids(self) -> tuple[list[str], bool]:
        """Window ids of the chunks that produced a summary, and whether any chunk named its
        messages (False: none did, so the figure is the window)."""
        covered = {self.order[m] for c in self.chunks for m in c.message_ids if m in self.order}
        if not covered:
            return [m.message_id for m in self.messages], False
        return [self.messages[i].message_id for i in sorted(covered)], True


def _ids(item: Decision | ActionItem | OpenQuestion | Link | Artifact | KnowledgeItem) -> list[str]:
    if isinstance(item, Artifact):
        return [item.pointer.message_id]
    return item.message_ids


def _key(text: str) -> str:
    return " ".join(content_words(text)) or squash(text).casefold()


def _knowledge_key(item: KnowledgeItem) -> str:
    if item.content_pointer is not None:
        return "v:" + squash(item.content_pointer.quote or "")
    return "s:" + _key(item.content or "")  # the same advice or Q&A posted twice is one item


# See runner.core.merge: rule-made items from two chunks that say the same thing in other
# filler words are one item, citing both; the same snippet posted twice is one artifact.
OFFLINE_RULES = MergeRules(
    claim_key=_key,
    link_key=lambda url: url.rstrip("/"),
    knowledge_key=_knowledge_key,
    artifact_quote_key=squash,
    union_citations=True,
)


def _knowledge_strength(item: KnowledgeItem) -> int:
    if item.content_pointer is not None:
        return 4 if item.context_version else 3
    return {"recommendation": 3, "troubleshooting": 2, "howto": 2}.get(item.kind.value, 1)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _title(channel: str, topics: list, decisions: list[Decision], threaded: bool = False) -> str:  # type: ignore[type-arg]
    # The channel's own name says nothing in its title ("ubuntu: ubuntu, ...").
    topics = [t for t in topics if t.title.casefold() != channel.casefold()]
    if topics and threaded:
        # Conversation titles are sentences: the largest one, and how many more there were.
        more = f" (and {len(topics) - 1} more conversations)" if len(topics) > 1 else ""
        return truncate_words(f"{channel}: {topics[0].title}", 120 - len(more)) + more
    if topics:
        names = [t.title for t in topics[:3]]
        subject = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        return truncate_words(f"{channel}: {subject}", 120)
    if decisions:
        return truncate_words(f"{channel}: {decisions[0].text}", 120)
    return truncate_words(channel, 120)  # only what the window's words (and name) support


def _keywords(topics: list, knowledge: list[KnowledgeItem], artifacts: list[Artifact]) -> list[str]:  # type: ignore[type-arg]
    """Candidates (topic phrases, entities, languages); offline.prose keeps the window's words."""
    words: dict[str, None] = {}
    for topic in topics[:7]:
        words.setdefault(squash(topic.title).casefold()[:60], None)
    for item in knowledge:
        for ref in item.entity_refs:
            words.setdefault(ref.casefold()[:60], None)
    for artifact in artifacts:
        if artifact.language and artifact.language != "shell":
            words.setdefault(artifact.language.casefold(), None)
    return list(words)


# The window-wide topics and overview read at most this many messages: all cited ones, then
# evenly spaced others in window order. A window's vocabulary shows in a sample this size, and
# it keeps the reduce step from growing with the window (the map step already read every
# message; the item lists are merged from all chunks, not sampled).
MAX_ANALYSED_MESSAGES = 10_000


def analysed_messages(messages: Sequence[WindowMessage], cited: set[str]) -> list[WindowMessage]:
    """`messages`, or past MAX_ANALYSED_MESSAGES the cited ones and evenly spaced others."""
    return even_sample(messages, lambda m: m.message_id in cited, MAX_ANALYSED_MESSAGES)


def _empty_digest(window: Window) -> Digest:
    return Digest(
        title=truncate_words(window.channel_name or "channel", 120),
        coverage=Coverage(
            messages_total=0, messages_covered=0, notes="The window has no messages."
        ),
        signal_quality=SignalQuality(level=SignalLevel.EMPTY, reason="the window has no messages"),
    )


# The overview of a threaded window tells this many of its most important conversations (two
# sentences each at most: the contract allows 12, decisions and open points follow), then how
# many others there were.
OVERVIEW_CONVERSATIONS = 4
# A window earns a HIGH signal with at least this many conversations holding a firm decision,
# an announcement or an answered problem (`Importance.earned`), or one firm decision.
EARNED_FOR_HIGH = 2


def _told(
    merger: _Merger, writer: ProseWriter, ranked: Sequence[RankedConversation]
) -> list[tuple[RankedConversation, tuple[WindowMessage, WindowMessage | None]]]:
    """The `OVERVIEW_CONVERSATIONS` most important conversations worth telling that make a
    sentence (an opening that is only a paste or a hash does not), with their exchanges."""
    told: list[tuple[RankedConversation, tuple[WindowMessage, WindowMessage | None]]] = []
    for conversation in ranked:
        if len(told) == OVERVIEW_CONVERSATIONS:
            break
        if not conversation.importance.worth_telling:
            continue
        pair = exchange(merger, conversation)
        if (
            pair is not None
            and informative_opening(pair[0].normalized_text)
            and writer.exchange(*pair)
        ):
            told.append((conversation, pair))
    return told


# A window whose conversations worth telling start on several days is told as a roll-up (its
# `ROLLUP_CONVERSATIONS` most important conversations) and then day by day: one dated sentence
# for each of the `MAX_DAYS` days with the most important conversations, in date order.
ROLLUP_CONVERSATIONS = 2
MAX_DAYS = 6


def _by_day(
    merger: _Merger,
    writer: ProseWriter,
    ranked: Sequence[RankedConversation],
    skip: set[int],
) -> tuple[list[CitedSentence], list[RankedConversation], int]:
    """Dated sentences (each day's most important conversation worth telling, outside
    `skip`), the conversations they tell, and how many days had one."""
    best: dict[str, tuple[RankedConversation, WindowMessage]] = {}
    for conversation in ranked:  # most important first: the first seen of a day is its best
        if id(conversation) in skip or not conversation.importance.worth_telling:
            continue
        opening = opening_of(merger, conversation)
        if opening is None or not informative_opening(opening.normalized_text):
            continue
        best.setdefault(opening.ts.date().isoformat(), (conversation, opening))
    days = sorted(best, key=lambda d: -best[d][0].importance.score)[:MAX_DAYS]
    sentences: list[CitedSentence] = []
    told: list[RankedConversation] = []
    for day in sorted(days):
        conversation, opening = best[day]
        sentence = writer.dated(day, opening)
        if sentence is not None:
            sentences.append(sentence)
            told.append(conversation)
    return sentences, told, len(best)


class _Worth:
    """Which items may be told in the overview and highlights, most important first: never
    one whose message is noise (greetings, thanks, meals, leaving, jokes, bot lines), never a
    decision that is only an intention, and in a threaded window never one from a conversation
    ranked below `importance.OVERVIEW_MIN`."""

    def __init__(self, merger: _Merger, ranked: Sequence[RankedConversation] | None) -> None:
        self.merger = merger
        self.score: dict[str, float] = {}
        self.weak: set[str] = set()
        by_key = {m.message_id: str(m.conversation) for m in merger.messages}
        for conversation in ranked or ():
            keys = {by_key.get(m) for m in conversation.topic.message_ids}
            for key in keys:
                if key is None:
                    continue
                self.score[key] = conversation.importance.score
                if not conversation.importance.worth_telling:
                    self.weak.add(key)
        self.by_key = by_key

    def tellable(self, message_id: str) -> bool:
        message = self.merger.by_id.get(message_id)
        if message is None or is_noise(message.normalized_text):
            return False
        return self.by_key.get(message_id) not in self.weak

    def rank(self, items: Sequence[Item]) -> list[Item]:
        """The tellable `items`, from the most important conversation first (stable)."""
        kept = [item for item in items if _ids(item) and self.tellable(_ids(item)[0])]
        return sorted(kept, key=lambda i: -self.score.get(self.by_key.get(_ids(i)[0], ""), 0.0))

    def actions(
        self, actions: Sequence[ActionItem], told_keys: set[str] | None
    ) -> list[ActionItem]:
        """Actions worth a highlight: marked ones ("TODO", "[action]"), and in a threaded
        window the others only from a conversation the overview tells (the rule-found "I'll
        whisper this in your ear" of a side chat is no action a reader wants)."""
        kept = []
        for action in actions:
            source = self.merger.by_id.get(action.message_ids[0])
            marked = (
                source is not None
                and ACTION_MARKER.search(source.normalized_text) is not None
                and not self.abbreviated_address(source.normalized_text)
            )
            if marked or told_keys is None or self.by_key.get(action.message_ids[0]) in told_keys:
                kept.append(action)
        return self.rank(kept)

    def abbreviated_address(self, text: str) -> bool:
        """ "action: if i turn off compiz..." to actionparsnip: IRC users address a nick by its
        first letters, so a leading "word:" that begins a participant's name is no marker."""
        word = text.lstrip(" @").split(":", 1)[0].casefold()
        if len(word) < 4 or " " in word or ":" not in text:
            return False
        return any(key != word and key.startswith(word) for key in self.merger.participants.by_key)

    def questions(self, questions: Sequence[OpenQuestion]) -> list[OpenQuestion]:
        """Open questions that say what they are about (`importance.names_its_subject`)."""
        return self.rank([q for q in questions if names_its_subject(q.text)])

    def decisions(self, decisions: Sequence[Decision]) -> list[Decision]:
        firm = []
        for decision in decisions:
            source = self.merger.by_id.get(decision.message_ids[0])
            if (
                source is not None
                and firm_decision(decision.text)
                and firm_decision(source.normalized_text)
                and not personal_plan(decision.text)
            ):
                firm.append(decision)
        return self.rank(firm)


def _addressed(writer: ProseWriter, message_id: str) -> bool:
    message = writer.by_id.get(message_id)
    return (
        message is not None and writer.participants.addressee(message.normalized_text) is not None
    )


def _others_sentence(
    writer: ProseWriter, told: Sequence[object], rest: Sequence[RankedConversation]
) -> CitedSentence | None:
    """ "N other conversations, among them: <title>; <title>." citing those titles' messages
    (the two most important of the rest worth telling whose titles are prose); None when no
    other conversation is worth naming (noise is never named; the title still counts them)."""
    named = [
        r
        for r in rest
        if r.importance.earned
        and not NOT_PROSE.search(r.topic.title)
        and informative_opening(r.topic.title)
        # Named by a whole question: a title cut mid-sentence reads as noise in a list.
        and r.topic.title.rstrip().endswith("?")
        and len(set(content_words(r.topic.title))) >= 5
        # A title put to someone ("ducasse, ... should i be able to use a hotkey?") is a
        # follow-up inside a conversation, not what it is about.
        and not _addressed(writer, r.topic.message_ids[0])
    ][:2]
    if not named:
        return None
    titles = "; ".join(r.topic.title.rstrip(" .?!") for r in named)
    other = "other " if told else ""
    lead = f"{len(rest)} {other}conversation{'s' if len(rest) > 1 else ''}"
    among = "among them" if len(rest) > len(named) else "about"
    return writer.cite(
        [f"{lead}, {among}: {titles}.", f"{lead}: {titles}."],
        [r.topic.message_ids[0] for r in named],
    )


def _signal(
    counts: dict[str, int],
    has_topics: bool,
    ranked: Sequence[RankedConversation] | None,
    firm_decisions: int,
    answered: int,
) -> SignalQuality:
    """offline.merge's level from the item counts, HIGH only when earned: at least one firm
    decision, or `EARNED_FOR_HIGH` conversations with a decision, an announcement or an
    answered problem (a window that is not threaded: answered questions)."""
    signal = signal_quality(counts, has_topics, high=15, medium=6, min_kinds=3)
    if signal.level != SignalLevel.HIGH:
        return signal
    earned = answered if ranked is None else sum(1 for r in ranked if r.importance.earned)
    if firm_decisions >= 1 or earned >= EARNED_FOR_HIGH:
        return signal
    return SignalQuality(
        level=SignalLevel.MEDIUM,
        reason=truncate_words(
            f"{signal.reason}; no firm decision, and {earned} answered problems or announcements",
            300,
        ),
    )


def build_digest(
    chunks: Sequence[MappedChunk],
    window: Window,
    top_messages: Sequence[WindowMessage],
    model: ItemModel | None = None,
) -> Digest:
    """The offline reduce step (see the module docstring). When `model` decides open questions,
    it also decides which candidates are still open in the whole window."""
    if not window.messages:
        return _empty_digest(window)
    merger = _Merger(chunks, window, model.gated("open_questions") if model else None)
    channel = window.channel_name or "channel"
    decisions = merger.decisions()
    actions = merger.actions()
    pool = merger.knowledge()
    questions = merger.questions(pool)
    knowledge = link_knowledge(merger.cut("knowledge items", pool, 60, _knowledge_strength))
    links = merger.links()
    artifacts = merger.artifacts()
    messages = merger.messages
    cited: list[str] = [m.message_id for m in top_messages]
    for ids in [*(d.message_ids for d in decisions), *(a.message_ids for a in actions)]:
        cited.extend(ids[:1])
    cited.extend(k.message_ids[0] for k in knowledge if k.message_ids)
    views = [view_message(m) for m in analysed_messages(messages, set(cited))]
    # Topics are ranked over the whole window: a phrase every chunk mentions once is a topic
    # of the window even if no chunk saw it twice.
    # A threaded window's topics are its conversations (each a real exchange, titled by what
    # was asked); key phrases are the topics of a window that was not threaded.
    ranked = ranked_for(window)
    threaded = ranked is not None
    worth = _Worth(merger, ranked)
    if ranked is not None:
        topics = [r.topic for r in ranked[:12]]
    else:
        topics = topics_for(views, 12, frozenset(merger.participants.by_key))
    counts = {
        "decisions": len(decisions),
        "action items": len(actions),
        "open questions": len(questions),
        "links": len(links),
        "artifacts": len(artifacts),
        "knowledge items": len(knowledge),
    }
    told_decisions = worth.decisions(decisions)
    told_questions = worth.questions(questions)
    qa = sum(1 for k in knowledge if k.kind.value in ("troubleshooting", "howto", "fact"))
    signal = _signal(counts, bool(topics), ranked, len(told_decisions), qa)
    central = [
        c for c in central_messages(views, set(cited), 12) if worth.tellable(c.view.message_id)
    ][:8]
    writer = ProseWriter(merger.by_id, merger.participants)
    told: list[tuple[RankedConversation, tuple[WindowMessage, WindowMessage | None]]] = []
    told_keys: set[str] = set()
    notes: list[str] = []
    if signal.level == SignalLevel.EMPTY:
        # Quoting small talk as the overview would dress noise up as content.
        central = []
        overview = []
    else:
        named = [t for t in topics if t.title.casefold() != channel.casefold()]
        told = _told(merger, writer, ranked or ())
        days: list[CitedSentence] = []
        day_count = 0
        skip: set[int] = set()
        if len({m.ts.date() for m in messages}) > 1 and ranked:
            rollup = told[:ROLLUP_CONVERSATIONS]
            skip = {id(r) for r, _ in rollup}
            days, day_told, day_count = _by_day(merger, writer, ranked, skip)
            if len(days) > 1:
                told = rollup
                skip.update(id(r) for r in day_told)
            else:
                days, day_count = [], 0
        told_ids = {id(r) for r, _ in told} | (skip if days else set())
        told_keys = {
            worth.by_key.get(r.topic.message_ids[0], "")
            for r in ranked or ()
            if id(r) in told_ids and r.topic.message_ids
        }
        rest = [r for r in ranked or () if id(r) not in told_ids]
        if day_count > len(days):
            notes.append(
                f"Day by day: the {len(days)} days with the most important conversations of "
                f"{day_count} days with one worth telling."
            )
        overview = writer.overview(
            # A threaded window with no conversation to tell (all shorter than a real
            # exchange) is told by its most central messages that are not noise.
            [] if threaded else named,
            [] if threaded and (told or days) else central,
            merger.order,
            told_decisions,
            told_questions,
            [pair for _, pair in told],
            _others_sentence(writer, told, rest) if threaded else None,
            days,
        )
    # The title names the most important conversation the overview tells first.
    untold = [t for t in topics if all(t is not r.topic for r, _ in told)]
    title_topics = [
        *(r.topic for r, _ in told),
        *sorted(untold, key=lambda t: bool(NOT_PROSE.search(t.title))),
    ]
    if title_topics and NOT_PROSE.search(title_topics[0].title):
        title_topics = []  # a hash or a paste names nothing: decisions or the channel instead
    covered, parsed = merger.coverage_ids()
    if not parsed:
        notes.append("Coverage assumed: no chunk said which messages it covered.")
    covered_set = set(covered)
    missing = [m.message_id for m in messages if m.message_id not in covered_set]
    if missing:
        notes.append(
            f"{_plural(len(missing), 'message')} not covered (their chunks failed or were "
            f"skipped), starting at {missing[0][:60]}."
        )
    if merger.omitted:
        # "N of M" per capped list, so a reader knows how much was left out (GUIDE 7).
        capped = ", ".join(
            f"{kept} of {found} {name}" for name, (kept, found) in merger.omitted.items()
        )
        notes.append(f"Cut to the digest limits: kept {capped}.")
    notes.append("Rule-based offline extraction; small talk is left out of the item lists.")
    notable = list(dict.fromkeys([c.view.message_id for c in central] + cited))[:20]
    return Digest(
        title=_title(channel, title_topics, decisions, threaded),
        overview=overview,
        highlights=writer.highlights(
            told_decisions,
            worth.actions(actions, told_keys if threaded else None),
            told_questions,
            worth.rank(knowledge),
        ),
        coverage=Coverage(
            messages_total=len(messages),
            messages_covered=len(covered),
            first_message_id=messages[0].message_id,
            last_message_id=messages[-1].message_id,
            notes=truncate_words(" ".join(notes), 1000),
        ),
        search_keywords=window_keywords(
            _keywords(topics, knowledge, artifacts),
            token_set([channel, *(m.normalized_text for m in messages)]),
        ),
        signal_quality=signal,
        topics=topics if signal.level != SignalLevel.EMPTY else [],
        decisions=decisions,
        action_items=actions,
        open_questions=questions,
        links=links,
        artifacts=artifacts,
        knowledge_items=knowledge,
        notable_message_ids=sorted(notable, key=lambda m: merger.order.get(m, 0)),
    )
