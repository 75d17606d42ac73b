"""Channel memory's plan for one digest: which of its items link to items the channel already
tracks, which are new, and which state changes the window gives evidence for.

Plain data in and out, no database (runner/memory/store.py reads and writes): `plan_items`
takes the channel's open items (`TrackedItem`), the new digest's validated items (`NewItem`)
and the window's messages with their conversations (`MemoryMessage`), and returns a
`MemoryPlan`: the new items linked to a tracked one (a mention, not a new item: the rules are
runner/memory/linking.py), the ones that are new, and the state changes, each with its
evidence (the rules: runner/memory/transitions.py).

Every change carries the ids of the messages it rests on and, when they say it verbatim, a
pointer, and is checked against the window exactly like a digest's pointers
(`runner.memory.window.MemoryWindow.check`): a change whose evidence does not resolve is
returned in `rejected`, never applied. The evidence of a change must come after the item was
said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from runner.memory.items import ItemKind, NewItem, RuleItem, TrackedItem, rule_item
from runner.memory.linking import Link, link_target
from runner.memory.transitions import Proposed, StateChange, propose_changes
from runner.memory.window import SAME_TIME, Evidence, MemoryMessage, MemoryWindow


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


def plan_items(
    tracked: Sequence[TrackedItem],
    new_items: Sequence[NewItem],
    messages: Sequence[MemoryMessage],
) -> MemoryPlan:
    """Link, create and change items (see the module's docstring)."""
    window = MemoryWindow(messages)
    plan = MemoryPlan()
    old = [rule_item(t) for t in tracked]
    fresh: list[RuleItem] = []
    for new in new_items:
        item = window.rule_item(new)
        if item is None:
            continue  # cites nothing of this window: nothing to anchor it to
        target = link_target(item, old)
        if target is not None:
            linked, reason = target
            assert isinstance(linked.ref, int)  # only tracked items are link targets
            plan.links.append(Link(new, linked.ref, reason))
            continue
        said = window.claim_evidence(item.text, item.message_ids)
        if said is not None and window.check(said, item.said_at - SAME_TIME) is not None:
            said = None  # cited, but its words do not resolve: keep the ids, not the quote
        plan.created.append(Created(new, item.conversation_id, item.said_at, said))
        fresh.append(item)
    _keep_checked(plan, propose_changes(old, fresh, window), window)
    return plan


def _keep_checked(plan: MemoryPlan, proposed: Sequence[Proposed], window: MemoryWindow) -> None:
    """The first proposed change of each item whose evidence stands (`MemoryWindow.check`,
    against the time the item was said) into `plan.changes`; the others into `plan.rejected`."""
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
