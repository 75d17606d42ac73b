"""What one digest says about entities and recurring topics, as plain data for the store
(runner/entities/store.py): the window's entities with the messages mentioning them
(runner/entities/mentions.py), the digest items naming each, and the digest's topics grouped under
their channel-level profile keys with the items citing their messages.

An item names an entity when its text does (any spelling folding to the entity's key), when
it is the owner of an action item or the asker of a question, or when a knowledge item lists
it in `entity_refs` (canonicalized; a ref the window never mentioned becomes an entity too).

A topic's profile key (what makes "Docker networking" on Monday and "docker network issues" on
Friday one profile): the entity its title names that the window mentions most (people aside);
else the content words of its title (plural-folded, at most three, sorted). Keys are prefixed
`e:` and `w:` so the two kinds never collide. One entity rather than several, because titles
of one subject name different side entities from one window to the next ("nginx 502 after the
docker upgrade", "nginx 502 since the Postgres upgrade"); the price is that in a channel about
one thing most topics naming that thing share its profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from runner.core.contract import Digest
from runner.entities.mentions import (
    Entity,
    EntityKind,
    WindowText,
    canonical_key,
    known_kind,
    person_key,
    text_entity_keys,
    window_entities,
)
from runner.grounding.claim_support import content_tokens

# Item kinds as the store names their tables (db/migrations/0010_entities.sql).
TOPIC = "topic"
DECISION = "decision"
ACTION_ITEM = "action_item"
OPEN_QUESTION = "open_question"
KNOWLEDGE_ITEM = "knowledge_item"

MAX_KEY_WORDS = 3

ItemRef = tuple[str, int]  # (item kind, position in its section)


@dataclass
class TopicGroup:
    """The digest's topics sharing one profile key."""

    key: str
    title: str
    positions: list[int] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    items: list[ItemRef] = field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None


@dataclass(frozen=True)
class DigestEntities:
    entities: dict[str, Entity]
    item_refs: dict[str, list[ItemRef]]  # entity key → items naming it
    topics: list[TopicGroup]


def _fold_plural(word: str) -> str:
    plural = word.endswith("s") and not word.endswith(("ss", "us", "is", "ys"))
    return word[:-1] if len(word) > 3 and plural else word


def topic_key(title: str, entities: dict[str, Entity]) -> str | None:
    """The profile key of a topic titled `title` (see the module doc); None when the title has
    neither an entity nor a content word."""
    named = text_entity_keys(title, entities)
    named = [key for key in named if not key.startswith("@")]
    if named:
        return "e:" + min(named, key=lambda key: (-entities[key].mention_count, key))
    words = sorted({_fold_plural(word) for word in content_tokens(title) if not word.isdigit()})
    return "w:" + "|".join(words[:MAX_KEY_WORDS]) if words else None


def _ref_entity(entities: dict[str, Entity], surface: str, person: bool) -> str | None:
    """The key of an owner, asker or entity ref, added to `entities` when the window never
    mentioned it (the item itself is the mention)."""
    key = person_key(surface) if person else canonical_key(surface)
    if len(key) < 2 or key == "@":
        return None
    if key not in entities:
        kind = EntityKind.PERSON if person else (known_kind(key) or EntityKind.NAME)
        entities[key] = Entity(key, kind, strong=True)
        entities[key].surfaces[surface.strip().lstrip("@")] += 1
    return key


def analyze_digest(messages: Sequence[WindowText], digest: Digest) -> DigestEntities:
    """Entities of the window, the items naming them, and the digest's topic profiles."""
    entities = window_entities(messages)
    refs: dict[str, dict[ItemRef, None]] = {}

    def refer(keys: list[str | None], ref: ItemRef) -> None:
        for key in keys:
            if key is not None:
                refs.setdefault(key, {})[ref] = None

    for i, topic in enumerate(digest.topics):
        refer(list(text_entity_keys(f"{topic.title}\n{topic.summary}", entities)), (TOPIC, i))
    for i, decision in enumerate(digest.decisions):
        refer(list(text_entity_keys(decision.text, entities)), (DECISION, i))
    for i, action in enumerate(digest.action_items):
        owner = [_ref_entity(entities, action.owner, True)] if action.owner else []
        refer([*text_entity_keys(action.text, entities), *owner], (ACTION_ITEM, i))
    for i, question in enumerate(digest.open_questions):
        asker = [_ref_entity(entities, question.asked_by, True)] if question.asked_by else []
        refer([*text_entity_keys(question.text, entities), *asker], (OPEN_QUESTION, i))
    for i, item in enumerate(digest.knowledge_items):
        quote = item.content_pointer.quote if item.content_pointer else None
        text = "\n".join(part for part in (item.title, item.content, quote) if part)
        listed = [_ref_entity(entities, ref, False) for ref in item.entity_refs if ref.strip()]
        refer([*text_entity_keys(text, entities), *listed], (KNOWLEDGE_ITEM, i))
    return DigestEntities(
        entities=entities,
        item_refs={key: list(found) for key, found in refs.items()},
        topics=_topic_groups(digest, entities, {m.message_id: m.ts for m in messages}),
    )


def _topic_groups(
    digest: Digest, entities: dict[str, Entity], times: dict[str, datetime]
) -> list[TopicGroup]:
    groups: dict[str, TopicGroup] = {}
    topic_of_message: dict[str, set[str]] = {}
    for i, topic in enumerate(digest.topics):
        key = topic_key(topic.title, entities)
        if key is None or not topic.message_ids:
            continue
        group = groups.setdefault(key, TopicGroup(key, topic.title))
        group.positions.append(i)
        for message_id in topic.message_ids:
            if message_id not in group.message_ids:
                group.message_ids.append(message_id)
            ts = times.get(message_id)
            if ts is not None:
                group.first_seen = min(ts, group.first_seen or ts)
                group.last_seen = max(ts, group.last_seen or ts)
            topic_of_message.setdefault(message_id, set()).add(key)
    cited: list[tuple[str, int, list[str]]] = [
        *((DECISION, i, d.message_ids) for i, d in enumerate(digest.decisions)),
        *((ACTION_ITEM, i, a.message_ids) for i, a in enumerate(digest.action_items)),
        *((OPEN_QUESTION, i, q.message_ids) for i, q in enumerate(digest.open_questions)),
        *(
            (
                KNOWLEDGE_ITEM,
                i,
                [*k.message_ids, *([k.content_pointer.message_id] if k.content_pointer else [])],
            )
            for i, k in enumerate(digest.knowledge_items)
        ),
    ]
    for kind, position, message_ids in cited:
        keys = {key for message_id in message_ids for key in topic_of_message.get(message_id, ())}
        for key in sorted(keys):
            groups[key].items.append((kind, position))
    return list(groups.values())
