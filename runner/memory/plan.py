"""Channel items across digests: which items of a new digest are things the channel already tracks,
and which tracked items the new window changed the state of.

Plain data in and out, no database (runner/memory/store.py reads and writes): `plan_items`
takes the channel's open items (`TrackedItem`), the new digest's validated items (`NewItem`)
and the window's messages with their conversations (`MemoryMessage`), and returns a
`MemoryPlan`: the new items linked to a tracked one (a mention, not a new item), the ones that
are new, and the state changes, each with its evidence.

Rules (they read only words, authors, times and the reply structure, so they hold for any
chat):
- Link: a new item is the tracked item of the same kind that cites one of its messages; or
  that lives in the same conversation and shares `THREAD_OVERLAP` of their content words
  (Jaccard of `runner.grounding.claim_support.content_tokens`, two words at least; not for knowledge
  items); or, anywhere in the channel, `CONTENT_OVERLAP` (knowledge items, often a command
  where one word makes another thing: `KNOWLEDGE_OVERLAP`) and `MIN_SHARED_WORDS` words. An
  action item or question never links to one of another owner; a decision that reverses or
  replaces the tracked one (below) is never the same one.
- Question open → answered: the first later message of its conversation by someone other
  than the asker that is not a question, says something (`MIN_ANSWER_WORDS` content words),
  does not only thank, does not go on from its writer's own previous line ("and ...",
  "well ..."), is not addressed to someone else ("bob: ..."), comes from the person the
  question was put to when it was put to someone ("ann: does it ...?"), and is either said
  to the asker (by name or as a reply) or shares `MIN_ANSWER_WORDS` words with the question.
  One message answers one question (of those it fits, the one sharing most words). The
  evidence is that message, the pointer its opening. → dropped: the asker says it is solved
  or withdraws it ("never mind", "figured it out", "solved").
- Action item open → done: a later message saying it is done ("done", "merged", "shipped",
  "fixed", a pull-request or commit link), not negated and not a question, either by its
  owner in its conversation or naming the task (`TASK_OVERLAP` of the task's words, at least
  `MIN_TASK_WORDS`). → cancelled: the same with "cancelled", "won't do", "not needed" and the
  like, in its conversation, by its owner or naming the task.
- Decision in force → reversed / superseded: a later decision of the digest repeating at least
  two of its words, `THREAD_OVERLAP` of them in the same conversation (`TOPIC_COVERAGE`
  elsewhere), that reverses it (reverts, undoes, says it no longer holds, or negates what it
  said) or replaces it ("instead", "switch to", "rather than", "replace").
- Knowledge current → superseded / conflict: a new knowledge item whose `supersedes_id` or
  `conflicts_with_id` names a tracked item's key (`item:<id>`, what the map step was shown) or
  another item of the same digest.

Every change carries the ids of the messages it rests on and, when they say it verbatim, a
pointer, and is checked against the window exactly like a digest's pointers
(`runner.grounding.pointers.resolve_pointer`): a change whose evidence does not resolve is returned in
`rejected`, never applied. The evidence of a change must come after the item was said.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

from runner.core.contract import ContentPointer
from runner.grounding.addressing import LEADING_ADDRESS
from runner.grounding.citations import anchor_span, cut_span, sentence_spans
from runner.grounding.claim_support import content_tokens, prose_tokens
from runner.grounding.pointers import PointerError, resolve_pointer

THREAD_OVERLAP = 0.3
CONTENT_OVERLAP = 0.6
TOPIC_COVERAGE = 0.6
TASK_OVERLAP = 0.5
MIN_ANSWER_WORDS = 2
# Words two items must share to be linked on content alone: short items ("apt-get install
# vlc", "apt-get install googleearth") share most of their few words and are different things.
MIN_SHARED_WORDS = 4
# A knowledge item is often a command or a config line, where one other word ("grep Driver",
# "grep radeon") is another thing: linked on content only when nearly all words are the same.
KNOWLEDGE_OVERLAP = 0.9
# Words a message must share with a task to name it ("take a look" is no task's name).
MIN_TASK_WORDS = 3
MAX_EVIDENCE_CHARS = 300
# The prefix of a tracked item's key, as the map step is shown it (runner/digests/job.py).
KEY_PREFIX = "item:"
# Knowledge items of one digest may rest on the same message: the one superseding another may
# cite a message as old as the item it supersedes.
_SAME_TIME = timedelta(microseconds=1)


class ItemKind(str, Enum):
    QUESTION = "question"
    ACTION_ITEM = "action_item"
    DECISION = "decision"
    KNOWLEDGE = "knowledge"


# The state an item starts in, the only one it is linked and changed from.
OPEN_STATUS = {
    ItemKind.QUESTION: "open",
    ItemKind.ACTION_ITEM: "open",
    ItemKind.DECISION: "in_force",
    ItemKind.KNOWLEDGE: "current",
}


def item_key(item_id: int) -> str:
    return f"{KEY_PREFIX}{item_id}"


@dataclass(frozen=True)
class TrackedItem:
    """An item the channel tracks, in its open state."""

    id: int
    kind: ItemKind
    text: str
    owner: str | None
    conversation_id: int | None
    message_ids: tuple[str, ...]
    said_at: datetime
    said_text: str = ""  # the text of the message it was said in (whom a question was put to)


@dataclass(frozen=True)
class NewItem:
    """An item of the digest being stored (already validated), at `position` in its section."""

    kind: ItemKind
    position: int
    text: str
    owner: str | None
    message_ids: tuple[str, ...]
    key: str | None = None  # knowledge items: the digest's key, and what it supersedes
    supersedes: str | None = None
    conflicts_with: str | None = None
    pointer_message_id: str | None = None  # a verbatim knowledge item's message (also cited)


@dataclass(frozen=True)
class MemoryMessage:
    """A window message at the revision the digest read, with its conversation."""

    message_id: str
    author: str
    ts: datetime
    text: str
    conversation_id: int | None
    reply_to: str | None = None  # an explicit reply (external id)


@dataclass(frozen=True)
class Evidence:
    message_ids: tuple[str, ...]
    at: datetime
    # The verbatim span (message, start, end, text), resolved against the window.
    pointer: tuple[str, int, int, str] | None


# An item a change is about: a tracked one by id, or one of this digest.
ItemRef = int | NewItem


@dataclass(frozen=True)
class StateChange:
    item: ItemRef
    from_status: str
    to_status: str
    evidence: Evidence
    reason: str
    related: ItemRef | None = None


@dataclass(frozen=True)
class Link:
    new: NewItem
    tracked: int
    reason: str


@dataclass(frozen=True)
class Created:
    new: NewItem
    conversation_id: int | None
    said_at: datetime
    # Where it was said: its cited messages, the words of the latest that say it most.
    evidence: Evidence | None = None


@dataclass
class MemoryPlan:
    created: list[Created] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    changes: list[StateChange] = field(default_factory=list)
    rejected: list[tuple[StateChange, str]] = field(default_factory=list)


# Whole words only: "mount-fixed" or "fixed.conf" names a thing, it says nothing is done.
_DONE = re.compile(
    r"(?<![\w.-])(?:done|merged|shipped|fixed|landed|deployed|released|pushed|finished|"
    r"completed|implemented|resolved)(?![\w-]|\.\w)"
    r"|https?://\S+/(?:pull|merge_requests|commit|commits)/\w+",
    re.IGNORECASE,
)
_CANCELLED = re.compile(
    r"\b(?:cancel(?:l?ed)?|won'?t (?:do|fix)|wontfix|not needed|no longer needed|"
    r"no need anymore|scrap that|forget it|never ?mind|nvm)\b",
    re.IGNORECASE,
)
_WITHDRAWN = re.compile(
    r"\b(?:never ?mind|nvm|figured it out|solved it|sorted it|got it working|works now|"
    r"fixed it)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:not|n't|never|no|yet)\s+(?:\w+\s+){0,2}$|\b(?:not yet|isn't|aren't|wasn't)\b",
    re.IGNORECASE,
)
_REVERSAL = re.compile(
    r"\b(?:revert(?:ed|ing)?|roll(?:ed)? back|undo|undid|back(?:ed)? out|no longer|"
    r"not going to|won'?t|do not|don'?t|never|cancel(?:l?ed)?|drop(?:ped)?)\b",
    re.IGNORECASE,
)
_REPLACEMENT = re.compile(
    r"\b(?:instead|switch(?:ed|ing)? to|rather than|replac(?:e|ed|es|ing)|change(?:d)? to|"
    r"move(?:d)? to|go(?:ing)? with)\b",
    re.IGNORECASE,
)
# A message going on from its writer's own previous line ("and try ...", "well then"): it
# continues what they said before, it does not answer what was asked since.
_CONTINUATION = re.compile(r"^\W*(?:and|also|well|but|or|plus)\b", re.IGNORECASE)
# A message that only thanks or laughs, whatever follows: no answer.
_THANKS = re.compile(
    r"^\W*(?:thanks|thank you|thx|ty|cheers|lol|haha|hehe|np|no problem|you'?re welcome|yw)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|no|never|n't|don'?t|won'?t)\b", re.IGNORECASE)


def _tokens(text: str) -> set[str]:
    return set(content_tokens(text))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _owners_agree(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a.casefold() == b.casefold()


def _marker(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of `pattern` in `text` that no negation ("not yet merged") precedes."""
    for match in pattern.finditer(text):
        if not _NEGATED.search(text[max(0, match.start() - 30) : match.start()]):
            return match
    return None


# Openings that ask back even without a "?" (chat users often leave it out): "are u getting
# files from windows", "did you try the live cd", "what version do you run".
_ASKS_BACK = re.compile(
    r"^\W*(?:(?:are|did|have|do|does|can|could|would|were|will|is|was|should)\s+"
    r"(?:u|you|ya|it|that|this|there|your|the)\b"
    r"|(?:what|which|how|why|where|who)\s+(?:is|are|do|does|did|can|could|would|should|was|"
    r"were|kind|version|exactly)\b)",
    re.IGNORECASE,
)


def _is_question(text: str) -> bool:
    return text.rstrip().endswith("?") or bool(_ASKS_BACK.match(_without_address(text)))


class _Window:
    """The window's messages by id and by conversation, in time order."""

    def __init__(self, messages: Sequence[MemoryMessage]) -> None:
        self.messages = sorted(messages, key=lambda m: m.ts)
        self.by_id = {m.message_id: m for m in self.messages}
        self.texts = {m.message_id: m.text for m in self.messages}
        self.authors = {m.author.casefold() for m in self.messages}
        # Indexes, so each tracked item costs its conversation's messages, not the window's.
        self.by_conversation: dict[int, list[MemoryMessage]] = {}
        for message in self.messages:
            if message.conversation_id is not None:
                self.by_conversation.setdefault(message.conversation_id, []).append(message)
        # The messages saying something is done or cancelled (not negated, not a question),
        # with the marker found: computed once, read by every open action item.
        self.markers: dict[str, tuple[re.Match[str] | None, re.Match[str] | None]] = {}
        for message in self.messages:
            if _is_question(message.text):
                continue
            done, cancelled = _marker(_DONE, message.text), _marker(_CANCELLED, message.text)
            if done or cancelled:
                self.markers[message.message_id] = (done, cancelled)
        self.marked = [m for m in self.messages if m.message_id in self.markers]
        self.marked_times = [m.ts for m in self.marked]
        self._tokens: dict[str, set[str]] = {}

    def addressee(self, text: str, also: str) -> str | None:
        """Whom a message is addressed to by its first word: an author of the window or
        `also` (casefolded), or None."""
        match = LEADING_ADDRESS.match(text)
        if match is None:
            return None
        name = match.group(1).casefold()
        known = ({also} if also else set()) | self.authors
        return next(
            (a for a in sorted(known) if a == name or (len(name) >= 3 and a.startswith(name))),
            None,
        )

    def conversation_of(self, message_ids: Sequence[str], author: str | None) -> int | None:
        """The conversation of the item's message: the one its owner wrote, else the first."""
        cited = [self.by_id[m] for m in message_ids if m in self.by_id]
        own = [m for m in cited if author is not None and m.author.casefold() == author.casefold()]
        for message in own + cited:
            if message.conversation_id is not None:
                return message.conversation_id
        return None

    def said_at(self, message_ids: Sequence[str]) -> datetime | None:
        times = [self.by_id[m].ts for m in message_ids if m in self.by_id]
        return min(times) if times else None

    def in_conversation(self, conversation: int | None, when: datetime) -> list[MemoryMessage]:
        """The conversation's messages after `when`, in time order."""
        if conversation is None:
            return []
        return [m for m in self.by_conversation.get(conversation, ()) if m.ts > when]

    def marked_after(self, when: datetime) -> list[MemoryMessage]:
        """The messages after `when` that say something is done or cancelled."""
        return self.marked[bisect_right(self.marked_times, when) :]

    def tokens(self, message: MemoryMessage) -> set[str]:
        found = self._tokens.get(message.message_id)
        if found is None:
            found = self._tokens[message.message_id] = _tokens(message.text)
        return found

    def evidence(self, message: MemoryMessage, span: tuple[int, int] | None) -> Evidence:
        pointer = None
        if span is not None and span[1] > span[0]:
            start, end = span
            pointer = (message.message_id, start, end, message.text[start:end])
        return Evidence((message.message_id,), message.ts, pointer)

    def check(self, evidence: Evidence, since: datetime) -> str | None:
        """Why the evidence does not stand (None: it does), validated like a digest pointer."""
        missing = [m for m in evidence.message_ids if m not in self.texts]
        if missing or not evidence.message_ids:
            return "unknown_message_id"
        if evidence.at <= since:
            return "evidence_before_item"
        if evidence.pointer is not None:
            message_id, start, end, quote = evidence.pointer
            try:
                resolved = resolve_pointer(
                    ContentPointer(
                        message_id=message_id, char_start=start, char_end=end, quote=quote
                    ),
                    self.texts,
                )
            except PointerError:
                return "pointer_unresolved"
            if (resolved.char_start, resolved.char_end) != (start, end):
                return "pointer_unresolved"
        return None


def _answer_span(text: str) -> tuple[int, int]:
    """The opening of an answer, up to `MAX_EVIDENCE_CHARS`, cut at a word."""
    spans = sentence_spans(text)
    if not spans:
        return 0, len(text)
    return cut_span(text, spans[0][0], spans[-1][1], MAX_EVIDENCE_CHARS)


def _marker_span(text: str, match: re.Match[str]) -> tuple[int, int]:
    """The sentence holding a marker, cut to `MAX_EVIDENCE_CHARS` around it."""
    for start, end in sentence_spans(text):
        if start <= match.start() < end:
            if end - start > MAX_EVIDENCE_CHARS:
                start = max(start, match.start() - MAX_EVIDENCE_CHARS // 2)
            return cut_span(text, start, end, MAX_EVIDENCE_CHARS)
    return match.span()


@dataclass
class _Item:
    """A tracked or new item as the rules see it."""

    ref: ItemRef
    kind: ItemKind
    text: str
    owner: str | None
    conversation_id: int | None
    said_at: datetime
    message_ids: tuple[str, ...]
    tokens: set[str]
    said_text: str = ""


def _put_to(said_text: str, asker: str) -> str | None:
    """Whom a question was put to: the leading addressee of its message, when not the asker."""
    match = LEADING_ADDRESS.match(said_text)
    name = match.group(1).casefold() if match else None
    return name if name and name != asker else None


def _is_named(author: str, name: str) -> bool:
    """Whether `name` (as someone addressed them) names `author`."""
    folded = author.casefold()
    return folded == name or (len(name) >= 3 and folded.startswith(name))


def _without_address(text: str) -> str:
    match = LEADING_ADDRESS.match(text)
    return text[match.end() :] if match else text


def _question_change(item: _Item, window: _Window) -> StateChange | None:
    asker = (item.owner or "").casefold()
    put_to = _put_to(item.said_text, asker)
    for message in window.in_conversation(item.conversation_id, item.said_at):
        if asker and message.author.casefold() == asker:
            found = _marker(_WITHDRAWN, message.text)
            if found is not None and not _is_question(message.text):
                evidence = window.evidence(message, _marker_span(message.text, found))
                return StateChange(
                    item.ref,
                    "open",
                    "dropped",
                    evidence,
                    "the asker says it is solved or withdrawn",
                )
            continue
        if not asker:
            continue  # nobody to tell an answer from the question's own follow-ups
        spoken = _without_address(message.text)
        # The addressee is no word of the answer: "bob: nvm :)" says nothing about the question.
        if _is_question(message.text) or len(prose_tokens(spoken)) < MIN_ANSWER_WORDS:
            continue
        if _THANKS.match(spoken) or _CONTINUATION.match(spoken):
            continue
        if put_to is not None and not _is_named(message.author, put_to):
            continue  # the question was put to someone else
        addressed = window.addressee(message.text, asker)
        if addressed is not None and addressed != asker:
            continue  # said to someone else in the conversation
        to_asker = addressed == asker or message.reply_to in item.message_ids
        if not to_asker and len(item.tokens & window.tokens(message)) < MIN_ANSWER_WORDS:
            continue  # neither said to the asker nor about what was asked
        evidence = window.evidence(message, _answer_span(message.text))
        return StateChange(
            item.ref,
            "open",
            "answered",
            evidence,
            f"answered by {message.author} in its conversation",
        )
    return None


# How many words may come before the "done" of a completion report that does not name its
# task ("ok done", "just merged it", "I've pushed the fix"): further in, the word is part of
# something else the owner says ("you can set that somewhere, done this a year ago").
MAX_WORDS_BEFORE_DONE = 3


def _reports_completion(text: str, done: re.Match[str]) -> bool:
    """Whether the owner's message reports a task done, not merely uses a "done" word: a PR or
    commit link, or the word among the first words of what they say (after an addressee)."""
    if "://" in done.group(0):
        return True
    lead = LEADING_ADDRESS.match(text)
    start = lead.end() if lead and lead.end() <= done.start() else 0
    before = text[start : done.start()]
    # "Reading package lists... Done": a program's progress line pasted into the chat.
    if before.rstrip().endswith(("...", "\u2026")):
        return False
    return len(before.split()) <= MAX_WORDS_BEFORE_DONE


def _action_change(item: _Item, window: _Window) -> StateChange | None:
    owner = (item.owner or "").casefold()
    for message in window.marked_after(item.said_at):
        if message.message_id in item.message_ids:
            continue
        same_thread = (
            item.conversation_id is not None and message.conversation_id == item.conversation_id
        )
        shared = len(item.tokens & window.tokens(message))
        names_task = bool(item.tokens) and (
            shared / len(item.tokens) >= TASK_OVERLAP and shared >= MIN_TASK_WORDS
        )
        if not (same_thread or names_task):
            continue
        by_owner = bool(owner) and message.author.casefold() == owner
        done, cancelled = window.markers[message.message_id]
        if done is not None and (
            names_task or (same_thread and by_owner and _reports_completion(message.text, done))
        ):
            evidence = window.evidence(message, _marker_span(message.text, done))
            how = "names the task" if names_task else "its owner, in its conversation"
            return StateChange(
                item.ref, "open", "done", evidence, f"{message.author} says it is done ({how})"
            )
        if cancelled is not None and same_thread and (by_owner or names_task):
            evidence = window.evidence(message, _marker_span(message.text, cancelled))
            return StateChange(
                item.ref,
                "open",
                "cancelled",
                evidence,
                f"{message.author} says it is not to be done",
            )
    return None


def _replaces(old: _Item, new: _Item) -> str | None:
    """How decision `new` ends `old` ("reversed", "superseded"), or None."""
    if new.said_at <= old.said_at:
        return None
    # The share of the old decision's words the new one repeats: a decision that replaces
    # another names what it replaces, and adds the new choice (which Jaccard would punish).
    shared = old.tokens & new.tokens
    coverage = len(shared) / len(old.tokens) if old.tokens else 0.0
    same_thread = old.conversation_id is not None and old.conversation_id == new.conversation_id
    if len(shared) < 2 or coverage < (THREAD_OVERLAP if same_thread else TOPIC_COVERAGE):
        return None
    negation_flips = bool(_NEGATION.search(old.text)) != bool(_NEGATION.search(new.text))
    if (_REVERSAL.search(new.text) and not _REVERSAL.search(old.text)) or negation_flips:
        return "reversed"
    if _REPLACEMENT.search(new.text):
        return "superseded"
    return None


def _claim_evidence(new: _Item, window: _Window) -> Evidence | None:
    """A new item's own citations as evidence: its latest message, the sentence sharing most
    of its words as the pointer."""
    cited = [window.by_id[m] for m in new.message_ids if m in window.by_id]
    if not cited:
        return None
    message = max(cited, key=lambda m: m.ts)
    return Evidence(
        tuple(m.message_id for m in cited),
        message.ts,
        _pointer_of(message, anchor_span(new.text, message.text)),
    )


def _pointer_of(message: MemoryMessage, span: tuple[int, int]) -> tuple[str, int, int, str] | None:
    start, end = span
    return (message.message_id, start, end, message.text[start:end]) if end > start else None


def _link_target(new: _Item, tracked: Sequence[_Item]) -> tuple[_Item, str] | None:
    best: tuple[float, _Item, str] | None = None
    for old in tracked:
        if old.kind != new.kind or not _owners_agree(old.owner, new.owner):
            continue
        if new.kind == ItemKind.DECISION and _replaces(old, new):
            continue
        overlap = _jaccard(old.tokens, new.tokens)
        shared = len(old.tokens & new.tokens)
        if set(old.message_ids) & set(new.message_ids):
            score, reason = 2.0 + overlap, "cites the same message"
        elif (
            old.conversation_id is not None
            and old.conversation_id == new.conversation_id
            and overlap >= THREAD_OVERLAP
            and shared >= 2
            and new.kind != ItemKind.KNOWLEDGE
        ):
            score, reason = 1.0 + overlap, f"same conversation, {overlap:.0%} shared words"
        elif shared >= MIN_SHARED_WORDS and overlap >= (
            KNOWLEDGE_OVERLAP if new.kind == ItemKind.KNOWLEDGE else CONTENT_OVERLAP
        ):
            score, reason = overlap, f"{overlap:.0%} shared words"
        else:
            continue
        if best is None or score > best[0]:
            best = (score, old, reason)
    return None if best is None else (best[1], best[2])


def plan_items(
    tracked: Sequence[TrackedItem],
    new_items: Sequence[NewItem],
    messages: Sequence[MemoryMessage],
) -> MemoryPlan:
    """Link, create and change items (see the module's docstring)."""
    window = _Window(messages)
    plan = MemoryPlan()
    old = [
        _Item(
            t.id,
            t.kind,
            t.text,
            t.owner,
            t.conversation_id,
            t.said_at,
            t.message_ids,
            _tokens(t.text),
            t.said_text,
        )
        for t in tracked
    ]
    fresh: list[_Item] = []
    for new in new_items:
        said_at = window.said_at(new.message_ids)
        if said_at is None:
            continue  # cites nothing of this window: nothing to anchor it to
        conversation = window.conversation_of(new.message_ids, new.owner)
        first = window.by_id.get(new.message_ids[0]) if new.message_ids else None
        item = _Item(
            new,
            new.kind,
            new.text,
            new.owner,
            conversation,
            said_at,
            new.message_ids,
            _tokens(new.text),
            first.text if first else "",
        )
        target = _link_target(item, old)
        if target is not None:
            linked, reason = target
            assert isinstance(linked.ref, int)  # only tracked items are link targets
            plan.links.append(Link(new, linked.ref, reason))
            continue
        said = _claim_evidence(item, window)
        if said is not None and window.check(said, said_at - _SAME_TIME) is not None:
            said = None  # cited, but its words do not resolve: keep the ids, not the quote
        plan.created.append(Created(new, conversation, said_at, said))
        fresh.append(item)
    proposed: list[tuple[StateChange, datetime]] = []
    answers: dict[str, tuple[tuple[int, datetime], StateChange, datetime]] = {}
    for item in [*old, *fresh]:
        change: StateChange | None = None
        if item.kind == ItemKind.QUESTION:
            change = _question_change(item, window)
            if change is not None:
                # One message answers one question: of an asker's questions it fits, the one
                # sharing most words with it, else the latest asked.
                answer = change.evidence.message_ids[0]
                fit = (len(item.tokens & window.tokens(window.by_id[answer])), item.said_at)
                if answer not in answers or fit > answers[answer][0]:
                    answers[answer] = (fit, change, item.said_at)
                continue
        elif item.kind == ItemKind.ACTION_ITEM:
            change = _action_change(item, window)
        if change is not None:
            proposed.append((change, item.said_at))
    proposed += [(change, said) for _, change, said in answers.values()]
    proposed += _decision_changes(old, fresh, window)
    proposed += _knowledge_changes(old, fresh, window)
    _keep_checked(plan, proposed, window)
    return plan


def _keep_checked(
    plan: MemoryPlan, proposed: Sequence[tuple[StateChange, datetime]], window: _Window
) -> None:
    """The first proposed change of each item whose evidence stands (`_Window.check`, against
    the time the item was said) into `plan.changes`; the others into `plan.rejected`."""
    changed: set[int | tuple[ItemKind, int]] = set()
    for change, since in proposed:
        subject = change.item
        key = subject if isinstance(subject, int) else (subject.kind, subject.position)
        if key in changed:
            continue
        problem = window.check(change.evidence, since)
        if problem is not None:
            plan.rejected.append((change, problem))
            continue
        changed.add(key)
        plan.changes.append(change)


def _decision_changes(
    old: Sequence[_Item], fresh: Sequence[_Item], window: _Window
) -> list[tuple[StateChange, datetime]]:
    """Decisions in force that a decision of this digest reverses or replaces."""
    changes: list[tuple[StateChange, datetime]] = []
    for before in (o for o in old if o.kind == ItemKind.DECISION):
        for later in (f for f in fresh if f.kind == ItemKind.DECISION):
            how = _replaces(before, later)
            evidence = _claim_evidence(later, window) if how else None
            if how is None or evidence is None:
                continue
            where = (
                "its conversation"
                if later.conversation_id == before.conversation_id
                else ("its topic")
            )
            changes.append(
                (
                    StateChange(
                        before.ref,
                        "in_force",
                        how,
                        evidence,
                        f"a later decision in {where}",
                        related=later.ref,
                    ),
                    before.said_at,
                )
            )
            break
    return changes


def _knowledge_changes(
    old: Sequence[_Item], fresh: Sequence[_Item], window: _Window
) -> list[tuple[StateChange, datetime]]:
    """Knowledge items superseded or in conflict, by the keys the new items name."""
    by_key: dict[str, _Item] = {
        item_key(o.ref): o for o in old if o.kind == ItemKind.KNOWLEDGE and isinstance(o.ref, int)
    }
    for item in fresh:
        if isinstance(item.ref, NewItem) and item.ref.key:
            by_key.setdefault(item.ref.key, item)
    changes: list[tuple[StateChange, datetime]] = []
    for item in fresh:
        new = item.ref
        assert isinstance(new, NewItem)
        if new.kind != ItemKind.KNOWLEDGE:
            continue
        for reference, status in ((new.supersedes, "superseded"), (new.conflicts_with, "conflict")):
            target = by_key.get(reference or "")
            if target is None or target is item:
                continue
            evidence = _knowledge_evidence(new, item, window)
            if evidence is None:
                continue
            reason = (
                "a later item supersedes it"
                if status == "superseded"
                else "a later item contradicts it"
            )
            changes.append(
                (
                    StateChange(target.ref, "current", status, evidence, reason, related=new),
                    target.said_at - _SAME_TIME,
                )
            )
    return changes


def _knowledge_evidence(new: NewItem, item: _Item, window: _Window) -> Evidence | None:
    if new.pointer_message_id and new.pointer_message_id in window.by_id:
        message = window.by_id[new.pointer_message_id]
        return Evidence((message.message_id,), message.ts, None)
    return _claim_evidence(item, window)
