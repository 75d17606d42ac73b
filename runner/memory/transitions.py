"""State changes of channel items: which tracked items, and which items of the new digest, the
window gives evidence of being answered, dropped, done, cancelled, reversed, superseded or in
conflict.

Rules (they read only words, authors, times and the reply structure, so they hold for any
chat):
- Question open → answered: the first later message of its conversation by someone other
  than the asker that is not a question, says something (`MIN_ANSWER_WORDS` content words),
  does not only thank, does not go on from its writer's own previous line ("and ...",
  "well ..."), is not addressed to someone else ("bob: ..."), comes from the person the
  question was put to when it was put to someone ("ann: does it ...?"), and is either said
  to the asker (by name or as a reply) or shares `MIN_ANSWER_WORDS` words with the question.
  One message answers one question (of those it fits, the one sharing most words). The
  evidence is that message, the pointer its opening. → dropped: the asker says it is solved
  or withdraws it ("nvm, found it", "figured it out", "that fixed it", "works now"), in a
  clause that reports it (`runner.memory.cues.closes_question`).
- Action item open → done: a later message with a clause reporting it done ("done",
  "staging certs are updated, done", "merged", "I've pushed the fix", a pull-request or
  commit link; `runner.memory.cues.completion`), either by its owner in its conversation or
  naming the task (`TASK_OVERLAP` of the task's words, at least `MIN_TASK_WORDS`). → cancelled: the same with "cancelled", "won't do", "not needed" and the
  like, in its conversation, by its owner or naming the task.
- Decision in force → reversed / superseded: a later decision of the digest repeating at least
  two of its words, `THREAD_OVERLAP` of them in the same conversation (`TOPIC_COVERAGE`
  elsewhere), that reverses it (reverts, undoes, says it no longer holds, or negates what it
  said) or replaces it ("instead", "switch to", "rather than", "replace"). Or, without a
  later decision, a message of its conversation ending it: its author retracting it ("scratch
  that", "never mind") while it is the conversation's latest decision, someone reporting it
  reverted ("reverted", "rolled back", naming it or, unnamed, the latest decision), or a
  committed switch naming it ("we're switching to Postgres 17 instead of 16") → superseded.
- Knowledge current → superseded / conflict: a new knowledge item whose `supersedes_id` or
  `conflicts_with_id` names a tracked item's key (`item:<id>`, what the map step was shown) or
  another item of the same digest.

Each change is proposed with the time its evidence must come after (the time the item was
said); runner/memory/plan.py keeps the first of each item whose evidence stands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from runner.grounding.addressing import LEADING_ADDRESS
from runner.grounding.citations import cut_span, sentence_spans
from runner.grounding.claim_support import prose_tokens
from runner.memory.cues import (
    CONTINUATION,
    NEGATION,
    REPLACEMENT,
    REVERSAL,
    THANKS,
    closes_question,
    completion,
    is_question,
    retracts,
    reverts,
    switches,
    without_address,
)
from runner.memory.items import THREAD_OVERLAP, ItemKind, ItemRef, NewItem, RuleItem, item_key
from runner.memory.window import SAME_TIME, Evidence, MemoryWindow

TOPIC_COVERAGE = 0.6
TASK_OVERLAP = 0.5
MIN_ANSWER_WORDS = 2
# Words a message must share with a task to name it ("take a look" is no task's name).
MIN_TASK_WORDS = 3
MAX_EVIDENCE_CHARS = 300


@dataclass(frozen=True)
class StateChange:
    item: ItemRef
    from_status: str
    to_status: str
    evidence: Evidence
    reason: str
    related: ItemRef | None = None


# A change and the time its evidence must come after.
Proposed = tuple[StateChange, datetime]


def propose_changes(
    old: Sequence[RuleItem], fresh: Sequence[RuleItem], window: MemoryWindow
) -> list[Proposed]:
    """Every change the window gives evidence for, of the tracked items (`old`) and of the new
    digest's items (`fresh`), in the order they are to be checked."""
    proposed: list[Proposed] = []
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
    by_decision = _decision_changes(old, fresh, window)
    proposed += by_decision
    ended = {change.item for change, _ in by_decision}
    proposed += _decision_message_changes(old, fresh, window, ended)
    proposed += _knowledge_changes(old, fresh, window)
    return proposed


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


def _put_to(said_text: str, asker: str) -> str | None:
    """Whom a question was put to: the leading addressee of its message, when not the asker."""
    match = LEADING_ADDRESS.match(said_text)
    name = match.group(1).casefold() if match else None
    return name if name and name != asker else None


def _is_named(author: str, name: str) -> bool:
    """Whether `name` (as someone addressed them) names `author`."""
    folded = author.casefold()
    return folded == name or (len(name) >= 3 and folded.startswith(name))


def _question_change(item: RuleItem, window: MemoryWindow) -> StateChange | None:
    asker = (item.owner or "").casefold()
    put_to = _put_to(item.said_text, asker)
    for message in window.in_conversation(item.conversation_id, item.said_at):
        if asker and message.author.casefold() == asker:
            found = closes_question(message.text)
            if found is not None:
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
        spoken = without_address(message.text)
        # The addressee is no word of the answer: "bob: nvm :)" says nothing about the question.
        if is_question(message.text) or len(prose_tokens(spoken)) < MIN_ANSWER_WORDS:
            continue
        if THANKS.match(spoken) or CONTINUATION.match(spoken):
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


def _action_change(item: RuleItem, window: MemoryWindow) -> StateChange | None:
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
            names_task or (same_thread and by_owner and completion(message.text) is not None)
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


def decision_ending(old: RuleItem, new: RuleItem) -> str | None:
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
    negation_flips = bool(NEGATION.search(old.text)) != bool(NEGATION.search(new.text))
    if (REVERSAL.search(new.text) and not REVERSAL.search(old.text)) or negation_flips:
        return "reversed"
    if REPLACEMENT.search(new.text):
        return "superseded"
    return None


def _decision_changes(
    old: Sequence[RuleItem], fresh: Sequence[RuleItem], window: MemoryWindow
) -> list[Proposed]:
    """Decisions in force that a decision of this digest reverses or replaces."""
    changes: list[Proposed] = []
    for before in (o for o in old if o.kind == ItemKind.DECISION):
        for later in (f for f in fresh if f.kind == ItemKind.DECISION):
            how = decision_ending(before, later)
            evidence = window.claim_evidence(later.text, later.message_ids) if how else None
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


def _decision_author(item: RuleItem, window: MemoryWindow) -> str | None:
    """Who said a decision: its owner, else the writer of its first cited message."""
    if item.owner:
        return item.owner.casefold()
    first = window.by_id.get(item.message_ids[0]) if item.message_ids else None
    return first.author.casefold() if first else None


# What a message says that may end a decision: a retraction, a revert (and what it names), a
# switch.
_DecisionCues = tuple[re.Match[str] | None, tuple[re.Match[str], str] | None, re.Match[str] | None]


def _decision_message_changes(
    old: Sequence[RuleItem],
    fresh: Sequence[RuleItem],
    window: MemoryWindow,
    ended: set[ItemRef],
) -> list[Proposed]:
    """Decisions (tracked or of this digest) that a message of their conversation ends: see
    the module's docstring. Checked after `_decision_changes`, whose changes name the later
    decision and so come first."""
    decisions = [d for d in [*old, *fresh] if d.kind == ItemKind.DECISION]
    # When each conversation's decisions were said: a message retracts only the latest.
    said_in: dict[int | None, list[datetime]] = {}
    for decision in decisions:
        said_in.setdefault(decision.conversation_id, []).append(decision.said_at)
    # What each message says, read once however many decisions its conversation has.
    cues: dict[str, _DecisionCues] = {}
    changes: list[Proposed] = []
    for item in decisions:
        if item.ref in ended:
            continue  # a later decision of the digest ends it, and names it
        author = _decision_author(item, window)
        others = sorted(t for t in said_in[item.conversation_id] if t > item.said_at)
        for message in window.in_conversation(item.conversation_id, item.said_at):
            if message.message_id in item.message_ids:
                continue
            if message.message_id not in cues:
                text = message.text
                cues[message.message_id] = (retracts(text), reverts(text), switches(text))
            retraction, reverted, switch = cues[message.message_id]
            if retraction is None and reverted is None and switch is None:
                continue
            latest = not others or others[0] >= message.ts
            shared = item.tokens & window.tokens(message)
            names_it = len(shared) >= 2 and len(shared) / max(len(item.tokens), 1) >= (
                THREAD_OVERLAP
            )
            found: re.Match[str] | None = None
            how = reason = ""
            if retraction and latest and author in (None, message.author.casefold()):
                found, how, reason = retraction, "reversed", "its author retracts it"
            elif reverted and ((latest and not reverted[1]) or names_it):
                found, how, reason = (
                    reverted[0],
                    "reversed",
                    f"{message.author} reports it reverted",
                )
            elif switch and names_it:
                found, how = switch, "superseded"
                reason = f"{message.author} switches away from it"
            if found is None:
                continue
            evidence = window.evidence(message, _marker_span(message.text, found))
            changes.append((StateChange(item.ref, "in_force", how, evidence, reason), item.said_at))
            break
    return changes


def _knowledge_changes(
    old: Sequence[RuleItem], fresh: Sequence[RuleItem], window: MemoryWindow
) -> list[Proposed]:
    """Knowledge items superseded or in conflict, by the keys the new items name."""
    by_key: dict[str, RuleItem] = {
        item_key(o.ref): o for o in old if o.kind == ItemKind.KNOWLEDGE and isinstance(o.ref, int)
    }
    for item in fresh:
        if isinstance(item.ref, NewItem) and item.ref.key:
            by_key.setdefault(item.ref.key, item)
    changes: list[Proposed] = []
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
                    target.said_at - SAME_TIME,
                )
            )
    return changes


def _knowledge_evidence(new: NewItem, item: RuleItem, window: MemoryWindow) -> Evidence | None:
    if new.pointer_message_id and new.pointer_message_id in window.by_id:
        message = window.by_id[new.pointer_message_id]
        return Evidence((message.message_id,), message.ts, None)
    return window.claim_evidence(item.text, item.message_ids)
