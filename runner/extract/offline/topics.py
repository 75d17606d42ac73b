"""Key phrases: what a run of messages is about, as one- and two-word phrases that several
messages share, with the messages that mention them.

Candidates are the words of prose (code, URLs and quotes left out) between stopwords, and the
pairs of adjacent ones; a phrase needs at least two messages. A word is dropped in favour of a
pair that contains it when the pair covers at least half of its messages ("retry policy" rather
than "retry"). Ties break on the phrase itself, so the ranking is deterministic.
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from runner.conversations.threads import ThreadedMessage, conversation_title
from runner.core.contract import Topic
from runner.core.window import Window, WindowMessage
from runner.extract.offline.artifacts import command_like
from runner.extract.offline.importance import Importance, helpers, importance
from runner.extract.offline.text import PartView, content_words, truncate_words, without_urls
from runner.extract.offline.threads import is_social
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP as MIN_TOPIC_SUPPORT
from runner.grounding.claim_support import STOPWORDS, support_share
from runner.grounding.words import TECH_WORD, word_matches

_CHAT_STOPWORDS = frozenset(
    """
    like think know want need make sure yeah yes yep nope ok okay thanks thank thx lol lmao
    hmm hm just really actually maybe probably something anything everything nothing thing
    things way still even much many well good great nice cool fine right now today tomorrow
    yesterday time times lot bit going gonna let lets im dont cant doesnt didnt isnt wasnt
    wont ive youre thats theres don doesn didn isn wasn won aren couldn shouldn wouldn haven
    hasn ain anyone someone everyone anybody somebody people guys folks hi hello hey please
    see look looks looking try tried trying work works worked working said say says new
    first last next back though since another every without would could should might must
    shall may us etc yet already able seems seem seemed idea question problem issue help
    thing stuff kind sort wait sorry yup sure guess mean means meant put take took come came
    go goes went done doing day days week weeks morning afternoon evening tonight later soon
    ago minute minutes hour hours second seconds also again still anyway btw imo tbh afaik
    fyi pls plz thing yeah here there where when what which who how why whatever whenever
    however else other others same different better best worse worst big small little long
    short old lot lots few one two three four five six seven eight nine ten question
    questions answer answers ask asked give gave given find found keep kept tell told call
    called run ran runs running
    monday tuesday wednesday thursday friday saturday sunday january february april june july
    august september october november december dunno gotta wanna kinda sorta thanks cheers
    """.split()
)
_HEX_OR_ID = re.compile(r"[0-9a-f]{8,}|[0-9a-z]*\d[0-9a-z]*\d[0-9a-z]{6,}", re.IGNORECASE)
_BRACED = re.compile(r"\{\w+\}")
# Placeholders that exports and datasets put where content was removed: `[<-LINK->]`,
# `<-CODE->`, `<URL>`, `[IMAGE]`. They stand for something else, so they are never a topic.
_PLACEHOLDER = re.compile(r"\[?<-?[A-Z][A-Z_]*-?>\]?|\[[A-Z][A-Z_]+\]")
_VERSIONISH = re.compile(r"v?\d{1,4}(?:\.\d{1,4}){1,3}")


class _Token(NamedTuple):
    # A tuple, not a dataclass: one is built per word of every message (the hot path).
    key: str
    surface: str
    start: int
    end: int


# Words repeat across a channel, so the per-word rules are cached (bounded: a window of unique
# identifiers cannot grow them without limit). Pure functions of the word: deterministic.
@functools.lru_cache(maxsize=65536)
def _valid(key: str) -> bool:
    if key in STOPWORDS or key in _CHAT_STOPWORDS or len(key) > 30:
        return False
    if _VERSIONISH.fullmatch(key):
        return True
    if len(key) < 3 or not any(ch.isalpha() for ch in key):
        return False
    return not _HEX_OR_ID.fullmatch(key)


@functools.lru_cache(maxsize=65536)
def _singular(key: str) -> str:
    """ "containers" and "container" are one topic (the key only; titles keep the surface)."""
    if len(key) > 4 and key.endswith("s") and not key.endswith(("ss", "us", "is")):
        return key[:-1]
    return key


def _tokens(text: str) -> list[_Token]:
    return [
        _Token(m.group(0).casefold().rstrip(".-"), m.group(0).rstrip(".-"), m.start(), m.end())
        for m in word_matches(text, TECH_WORD)
    ]


@dataclass(frozen=True)
class _Phrase:
    surface: str
    marked: bool  # written like a name: capitalized mid-sentence, or with digits, _ or dots


_NAME_LIKE = re.compile(r"[\d_.]|[a-z][A-Z]")


def _marked(token: _Token, first: bool) -> bool:
    surface = token.surface
    if _NAME_LIKE.search(surface):
        return True
    return not first and surface[:1].isupper()


def phrases_of(sentences: Sequence[str]) -> dict[str, _Phrase]:
    """Candidate phrases of some sentences: key → how it is written, in order of appearance.
    A number may end a pair ("Postgres 16") but is not a phrase by itself."""
    found: dict[str, _Phrase] = {}
    for sentence in sentences:
        # `{word}` is markup (transcript tags like {vocalsound}, template fields), not a topic.
        text = _PLACEHOLDER.sub(" ", _BRACED.sub(" ", without_urls(sentence)))
        previous: _Token | None = None
        for position, token in enumerate(_tokens(text)):
            number = token.key.isdigit() and len(token.key) <= 4
            adjacent = previous is not None and text[previous.end : token.start].strip() == ""
            # "Postgres 16" names a thing, "max 5" does not: a number ends a pair only after a
            # capitalized word.
            numbered = number and previous is not None and previous.surface[:1].isupper()
            pairs = (
                previous is not None
                and adjacent
                and (numbered or _valid(token.key))
                and not _VERSIONISH.fullmatch(previous.key)
            )
            if pairs and previous is not None:
                marked = number or _marked(previous, position == 1) or _marked(token, False)
                found.setdefault(
                    f"{_singular(previous.key)} {_singular(token.key)}",
                    _Phrase(f"{previous.surface} {token.surface}", marked),
                )
            if not _valid(token.key):
                previous = None
                continue
            found.setdefault(
                _singular(token.key), _Phrase(token.surface, _marked(token, position == 0))
            )
            previous = token
    return found


@dataclass
class _Candidate:
    key: str
    surfaces: Counter[str]
    # Insertion-ordered set: membership is O(1), so a phrase in most of a 100,000-message
    # window costs no scan of its earlier messages (a list here made collection quadratic).
    mentions: dict[str, None]
    authors: set[str]
    marked: int = 0

    @property
    def message_ids(self) -> list[str]:
        return list(self.mentions)


def _collect(views: Sequence[PartView], names: frozenset[str]) -> dict[str, _Candidate]:
    candidates: dict[str, _Candidate] = {}
    names = names | {_singular(name) for name in names}
    for view in views:
        sentences = [s.text for s in view.sentences if not command_like(s.text)]
        if is_social(" ".join(sentences)):
            continue
        for key, phrase in phrases_of(sentences).items():
            if any(word in names for word in key.split(" ")):
                continue  # people are not topics (IRC nicks would top every list)
            candidate = candidates.get(key)
            if candidate is None:
                candidate = candidates[key] = _Candidate(key, Counter(), {}, set())
            candidate.surfaces[phrase.surface] += 1
            candidate.marked += phrase.marked
            candidate.mentions[view.message_id] = None
            candidate.authors.add(view.author)
    return candidates


def _score(candidate: _Candidate) -> float:
    score = len(candidate.mentions) + 0.5 * len(candidate.authors)
    if " " in candidate.key:
        score *= 1.6
    elif re.search(r"(?:ed|ing|ly)$", candidate.key):
        score *= 0.5  # verbs and adverbs name no topic
    if candidate.marked * 2 >= sum(candidate.surfaces.values()):
        score *= 1.3  # names, versions, identifiers: what a channel is about
    return score


def _surface(candidate: _Candidate) -> str:
    return sorted(candidate.surfaces.items(), key=lambda item: (-item[1], item[0]))[0][0]


def key_phrases(
    views: Sequence[PartView], limit: int, names: frozenset[str] = frozenset()
) -> list[tuple[str, list[str]]]:
    """The top `limit` phrases as (title, message ids in text order); `names` are the
    case-folded ways participants are called, never topics."""
    candidates = {k: c for k, c in _collect(views, names).items() if len(c.mentions) >= 2}
    suppressed: set[str] = set()
    for key, candidate in candidates.items():
        if " " in key:
            for word in key.split(" "):
                single = candidates.get(word)
                if single and len(candidate.mentions) * 2 >= len(single.mentions):
                    suppressed.add(word)
    ranked = sorted(
        (c for k, c in candidates.items() if k not in suppressed),
        key=lambda c: (-_score(c), c.key),
    )
    chosen: list[_Candidate] = []
    for candidate in ranked:
        words = set(candidate.key.split(" "))
        # A phrase sharing words with a stronger pick and only its messages adds nothing.
        if any(
            words & set(c.key.split(" ")) and candidate.mentions.keys() <= c.mentions.keys()
            for c in chosen
        ):
            continue
        chosen.append(candidate)
        if len(chosen) == limit:
            break
    return [(_surface(c), c.message_ids) for c in chosen]


def topics_for(
    views: Sequence[PartView], limit: int, names: frozenset[str] = frozenset()
) -> list[Topic]:
    """Contract topics for a run of parts: title, an extractive summary sentence, message ids.
    Placeholders (`[<-LINK->]`) and stopwords are never titles (see `phrases_of`).
    A phrase whose words the validator's tokens do not find in its messages (`realpath_chk`
    cut out of `__realpath_chk`) is no topic: its title would be dropped as unsupported."""
    topics: list[Topic] = []
    by_id = {view.message_id: view for view in views}
    used: set[str] = set()
    for title, message_ids in key_phrases(views, limit * 2, names):
        share = support_share(title, [by_id[m].message.normalized_text for m in message_ids[:30]])
        if share is None or share < MIN_TOPIC_SUPPORT:
            continue
        if len(topics) == limit:
            break
        needle = title.casefold()
        sentences = (
            s.text
            for message_id in message_ids
            for s in by_id[message_id].sentences
            if needle in s.text.casefold() and 5 <= len(s.text.split()) <= 60
        )
        # The first sentence no stronger topic already shows, so summaries do not repeat
        # (lazily: a window-wide topic would otherwise scan all its messages).
        first: str | None = None
        chosen = ""
        for sentence in sentences:
            first = sentence if first is None else first
            if sentence not in used:
                chosen = sentence
                break
        else:
            chosen = first or ""
        used.add(chosen)
        topics.append(
            Topic(
                title=truncate_words(title, 120),
                summary=truncate_words(chosen, 300),
                message_ids=message_ids[:30],
            )
        )
    return topics


# A conversation is a topic when it is a real exchange: at least this many messages, two
# people, and this many messages that say something (not greetings or thanks).
MIN_CONVERSATION_MESSAGES = 4
MIN_SUBSTANTIVE_MESSAGES = 2
MAX_TOPIC_MESSAGES = 30  # the contract's cap on a topic's message_ids


@dataclass(frozen=True)
class RankedConversation:
    """A conversation told as a topic, with how much it is worth reading."""

    topic: Topic
    importance: Importance
    size: int


def ranked_conversations(messages: Sequence[WindowMessage]) -> list[RankedConversation] | None:
    """Every real exchange of a threaded window (`WindowMessage.conversation` set once a digest
    threaded the window) as a topic titled by a quote of its opening
    (`runner.conversations.threads.conversation_title`), the most important first
    (`offline.importance`; ties: the larger, then the earlier); None when the window is not
    threaded, so the caller falls back to key phrases."""
    if not messages or any(m.conversation is None for m in messages):
        return None
    groups: dict[str, list[WindowMessage]] = {}
    for message in messages:
        groups.setdefault(str(message.conversation), []).append(message)
    helper_names = helpers(messages, {m.message_id: str(m.conversation) for m in messages})
    ranked: list[tuple[float, int, int, RankedConversation]] = []
    for position, members in enumerate(groups.values()):
        # The cheap tests first: most conversations of a busy channel are a message or two.
        if len(members) < MIN_CONVERSATION_MESSAGES or len({m.author for m in members}) < 2:
            continue
        substantive = [
            m
            for m in members
            if len(content_words(m.normalized_text)) >= 3 and not is_social(m.normalized_text)
        ]
        if len(substantive) < MIN_SUBSTANTIVE_MESSAGES:
            continue
        ordered = sorted(members, key=lambda m: m.ts)
        title = conversation_title(
            [ThreadedMessage(m.message_id, m.author, m.ts, m.normalized_text) for m in ordered]
        )
        if title is None:
            continue
        cited = [title.message_id] + [
            m.message_id for m in substantive if m.message_id != title.message_id
        ]
        opening = next(m for m in ordered if m.message_id == title.message_id)
        worth = importance(ordered, helper_names, opening)
        authors = list(dict.fromkeys(m.author for m in ordered))
        others = " and others" if len(authors) > 4 else ""
        summary = f"{len(members)} messages between {', '.join(authors[:4])}{others}."
        topic = Topic(
            title=truncate_words(title.text, 120),
            summary=summary,
            message_ids=cited[:MAX_TOPIC_MESSAGES],
        )
        ranked.append(
            (
                -round(worth.score, 9),
                -len(members),
                position,
                RankedConversation(topic, worth, len(members)),
            )
        )
    return [item for *_, item in sorted(ranked, key=lambda r: r[:3])]


# A window's ranking by window object, while the window lives: the digest's reduce and its
# periods both rank the same window, and the ranking is most of the periods' CPU. Keyed by
# identity (a Window and its messages are frozen), dropped when the window is collected.
_RANKED: dict[int, list[RankedConversation] | None] = {}
_RANKED_LOCK = threading.Lock()


def remember_ranked(window: Window, ranked: list[RankedConversation] | None) -> None:
    """Keep `ranked` as `window`'s ranking (computed elsewhere, e.g. in the CPU pool)."""
    key = id(window)
    with _RANKED_LOCK:
        if key in _RANKED:
            return
        _RANKED[key] = ranked
    weakref.finalize(window, _RANKED.pop, key, None)


def ranked_for(window: Window) -> list[RankedConversation] | None:
    """`ranked_conversations(window.messages)`, computed once per window object."""
    with _RANKED_LOCK:
        if id(window) in _RANKED:
            return _RANKED[id(window)]
    ranked = ranked_conversations(window.messages)
    remember_ranked(window, ranked)
    return ranked


def conversation_topics(messages: Sequence[WindowMessage], limit: int) -> list[Topic] | None:
    """The `limit` most important conversations of a threaded window as topics (see
    `ranked_conversations`); None when the window is not threaded."""
    ranked = ranked_conversations(messages)
    return None if ranked is None else [r.topic for r in ranked[:limit]]
