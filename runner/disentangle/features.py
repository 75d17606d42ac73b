"""What the link model sees: for a message and each earlier candidate it may answer (or itself,
for "starts a conversation"), a short list of binary feature names.

The same code makes the features for training (scripts/train_disentangle.py) and for linking, so
the two cannot drift apart. Nothing here is specific to one platform: nicknames are the authors
seen earlier in the same channel (no list of Ubuntu regulars), rare words are rare in this
channel so far (no corpus-wide table), times are differences of whatever clock the export has.

`ChannelState` is updated message by message, so a channel is read once, left to right, and the
work per message is bounded by the candidate window, whatever the channel's length.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from runner.claim_support import STOPWORDS
from runner.disentangle.message import Message

WINDOW = 100  # earliest candidate: 99% of the training links reach back at most this far
NEAR = 40  # every candidate this close is scored; farther ones only when a name ties them
MIN_PREFIX = 3  # "nafa:" addresses Nafallo when no other recent author starts that way

_NAME_TOKEN = re.compile(r"[^\s,:;!?()\"'<>]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+#/-]*[a-z0-9+#]|[a-z0-9]")
_ADDRESS = re.compile(r"\s*@?([^\s,:;]+)\s*[:,;>]")  # "nick:", "nick," "@nick:" at the start

SELF = -1  # the candidate "this message starts a new conversation"

_DIST_BINS = (1, 2, 3, 4, 5, 8, 12, 20, 35, 60)
_GAP_BINS = (30, 60, 120, 300, 600, 1800)
_WORD_BINS = (0.0, 3.0, 6.0, 10.0)
_LEN_BINS = (3, 8, 20)


def _bin(value: float, bins: tuple[float, ...]) -> int:
    for index, edge in enumerate(bins):
        if value <= edge:
            return index
    return len(bins)


@dataclass(frozen=True, slots=True)
class Seen:
    """A message as the features need it, computed once when it is read."""

    key: str  # case-folded author ("" for system notices)
    ts: float
    addressed: str | None  # the author named at the start ("nick: ..."), case-folded
    mentions: frozenset[str]  # every earlier author named anywhere, case-folded
    words: frozenset[str]  # content words, case-folded, names removed
    question: bool
    system: bool
    length: int  # words


class ChannelState:
    """What has been read of the channel so far: who spoke when, who talked to whom, how common
    each word is. `read(message)` appends the message's `Seen`; `commit()` then records who it
    named and what words it used, after its features are made, so they see only earlier messages."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.last_by_author: dict[str, int] = {}
        self.first_by_author: dict[str, int] = {}
        self.talked: dict[tuple[str, str], int] = {}  # sorted author pair -> last addressing
        self.document_frequency: Counter[str] = Counter()
        self.messages_read = 0
        # The conversations decided so far (from the parents chosen for earlier messages).
        self.conversation_of: list[int] = []
        self.conversation_last: list[int] = []  # conversation -> its latest message
        self.conversation_authors: list[set[str]] = []

    def _resolve_address(self, text: str, author: str) -> str | None:
        match = _ADDRESS.match(text)
        if not match:
            return None
        name = match[1].casefold()
        if name in self.last_by_author:
            return name if name != author else None
        if len(name) < MIN_PREFIX:
            return None
        # An abbreviated nick: the most recent author whose name starts with it.
        best: str | None = None
        best_index = -1
        for other, index in self.last_by_author.items():
            if other.startswith(name) and other != author and index > best_index:
                best, best_index = other, index
        return best

    def read(self, message: Message) -> Seen:
        if message.system or not message.author:
            seen = Seen("", message.ts, None, frozenset(), frozenset(), False, True, 0)
            self.seen.append(seen)
            return seen
        key = message.author.casefold()
        text = message.text
        folded = text.casefold()
        addressed = self._resolve_address(text, key)
        known = self.last_by_author
        names = {token for token in _NAME_TOKEN.findall(folded) if token in known}
        names.discard(key)
        if addressed:
            names.add(addressed)
        tokens = _WORD.findall(folded)
        words = frozenset(t for t in tokens if t not in STOPWORDS and t not in known and len(t) > 1)
        seen = Seen(key, message.ts, addressed, frozenset(names), words, "?" in text, False,
                    len(tokens))  # fmt: skip
        self.seen.append(seen)
        return seen

    def commit(self, parent: int | None) -> None:
        """Record the message last read, answering `parent` (None: a new conversation), as part
        of the channel's past."""
        index = len(self.seen) - 1
        seen = self.seen[index]
        if parent is None or not 0 <= parent < index:
            conversation = len(self.conversation_last)
            self.conversation_last.append(index)
            self.conversation_authors.append(set())
        else:
            conversation = self.conversation_of[parent]
            self.conversation_last[conversation] = index
        self.conversation_of.append(conversation)
        if seen.system:
            return
        self.conversation_authors[conversation].add(seen.key)
        key = seen.key
        for name in seen.mentions:
            self.talked[(key, name) if key < name else (name, key)] = index
        self.last_by_author[key] = index
        self.first_by_author.setdefault(key, index)
        self.document_frequency.update(seen.words)
        self.messages_read += 1

    def rarity(self, word: str) -> float:
        """Inverse document frequency of `word` in the channel read so far."""
        return math.log((self.messages_read + 1) / (self.document_frequency[word] + 1))


def self_features(state: ChannelState, index: int) -> list[str]:
    """Features of "message `index` starts a conversation" (state: read up to `index`)."""
    seen = state.seen[index]
    features = ["self"]
    if seen.addressed:
        features.append("self:addressed")
    elif seen.mentions:
        features.append("self:mentions")
    if seen.question:
        features.append("self:question")
    if seen.key not in state.first_by_author:
        features.append("self:first_from_author")
    features.append(f"self:len{_bin(seen.length, _LEN_BINS)}")
    previous = _previous_spoken(state, index)
    if previous is None:
        features.append("self:channel_start")
    else:
        features.append(f"self:gap{_bin(seen.ts - state.seen[previous].ts, _GAP_BINS)}")
    return features


def _previous_spoken(state: ChannelState, index: int) -> int | None:
    for earlier in range(index - 1, max(-1, index - WINDOW - 1), -1):
        if not state.seen[earlier].system:
            return earlier
    return None


_DIST_NAMES = tuple(f"dist{i}" for i in range(len(_DIST_BINS) + 1))
_GAP_NAMES = tuple(f"gap{i}" for i in range(len(_GAP_BINS) + 1))
_WORD_NAMES = tuple(f"words{i}" for i in range(len(_WORD_BINS) + 1))
_SIZE_BINS = (1, 2, 5)
_PEOPLE_NAMES = tuple(f"conversation_people{i}" for i in range(len(_SIZE_BINS) + 1))


def _near(distance: int) -> str:
    """A coarse distance, for the features whose weight depends on how far back they reach."""
    return "@1" if distance == 1 else "@3" if distance <= 3 else "@10" if distance <= 10 else "@far"


def pair_features(state: ChannelState, index: int, candidate: int) -> list[str]:
    """Features of "message `index` answers message `candidate`" (state: read, not committed,
    up to `index`)."""
    seen = state.seen
    message, other = seen[index], seen[candidate]
    distance = index - candidate
    near = _near(distance)
    features = [_DIST_NAMES[_bin(distance, _DIST_BINS)],
                _GAP_NAMES[_bin(message.ts - other.ts, _GAP_BINS)]]  # fmt: skip
    relations = []
    is_latest = state.last_by_author.get(other.key) == candidate
    if is_latest:
        features.append("cand_latest_of_author")
    if other.key == message.key:
        relations.append("same_author_latest" if is_latest else "same_author")
    if message.addressed == other.key:
        relations.append("addresses_cand_latest" if is_latest else "addresses_cand_author")
    elif other.key in message.mentions:
        relations.append("mentions_cand_author")
    elif message.addressed:
        relations.append("addresses_other")
    if other.addressed == message.key:
        relations.append("cand_addresses_author")
    elif message.key in other.mentions:
        relations.append("cand_mentions_author")
    elif other.addressed and other.key != message.key:
        features.append("cand_addresses_other")
    pair = (message.key, other.key) if message.key < other.key else (other.key, message.key)
    talked = state.talked.get(pair)
    if talked is not None and index - talked <= WINDOW:
        relations.append("pair_talked")
    if other.question:
        features.append("cand_question" if not message.question else "both_question")
    if state.first_by_author.get(other.key) == candidate:
        features.append("cand_first_from_author")
    shared = message.words & other.words
    if shared:
        score = sum(state.rarity(word) for word in shared)
        relations.append(_WORD_NAMES[_bin(score, _WORD_BINS)])
    conversation = state.conversation_of[candidate]
    if state.conversation_last[conversation] == candidate:
        relations.append("cand_ends_conversation")
    authors = state.conversation_authors[conversation]
    if message.key in authors and other.key != message.key:
        relations.append("author_in_conversation")
    if message.addressed is not None and message.addressed in authors:
        relations.append("addressed_in_conversation")
    features.append(_PEOPLE_NAMES[_bin(len(authors), _SIZE_BINS)])
    if distance == 1 and not message.addressed:
        features.append("adjacent_unaddressed")
    features.extend(relations)
    features.extend([name + near for name in relations])
    return features


def candidates(state: ChannelState, index: int) -> list[int]:
    """Earlier messages `index` may answer: every spoken message among the NEAR previous ones,
    and farther back (up to WINDOW) only those tied to it by a name: the same author, the author
    it names, or a message naming its author."""
    seen = state.seen
    message = seen[index]
    found = []
    for candidate in range(index - 1, max(-1, index - WINDOW - 1), -1):
        other = seen[candidate]
        if other.system:
            continue
        if index - candidate <= NEAR or (
            other.key == message.key or other.key in message.mentions
            or message.key in other.mentions
        ):  # fmt: skip
            found.append(candidate)
    return found
