"""What the link model sees: for a message and each earlier candidate it may answer (or itself,
for "starts a conversation"), a short list of binary features.

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
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from runner.conversations.disentangle.message import Message
from runner.grounding.claim_support import STOPWORDS

WINDOW = 100  # earliest candidate: 99% of the training links reach back at most this far
NEAR = 30  # every candidate this close is scored; farther ones only when a name ties them
MIN_PREFIX = 3  # "nafa:" addresses Nafallo when no other recent author starts that way

_NAME_TOKEN = re.compile(r"[^\s,:;!?()\"'<>]+")
_WORD = re.compile(r"[a-z0-9][a-z0-9_.+#/-]*[a-z0-9+#]|[a-z0-9]")
_ADDRESS = re.compile(r"\s*@?([^\s,:;]+)\s*[:,;>]")  # "nick:", "nick," "@nick:" at the start
_THANKS = re.compile(r"\b(?:thanks|thank you|thx|thanx|ty|cheers)\b")  # closes an exchange

_DIST_BINS = (1, 2, 3, 4, 5, 8, 12, 20, 35, 60)
_GAP_BINS = (30, 60, 120, 300, 600, 1800)
_WORD_BINS = (0.0, 3.0, 6.0, 10.0)
_LEN_BINS = (3, 8, 20)


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
    thanks: bool


def _strip_sigil(token: str) -> str:
    """ "@nick" and "#nick" name nick (Slack and Discord style, and some IRC users)."""
    return token.lstrip("@#")


class ChannelState:
    """What has been read of the channel so far: who spoke when, who talked to whom, how common
    each word is. `read(message)` appends the message's `Seen`; `commit()` then records who it
    named and what words it used, after its features are made, so they see only earlier messages."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.last_by_author: dict[str, int] = {}
        self.first_by_author: dict[str, int] = {}
        # author -> {other author: the latest message where one of them named the other}
        self.talked: dict[str, dict[str, int]] = {}
        self.document_frequency: Counter[str] = Counter()
        self.messages_read = 0
        # The conversations decided so far (from the parents chosen for earlier messages).
        self.conversation_of: list[int] = []
        self.conversation_first: list[int] = []  # conversation -> its first message
        self.conversation_last: list[int] = []  # conversation -> its latest message
        self.conversation_authors: list[set[str]] = []
        self.parent_of: list[int | None] = []
        self.answered: set[int] = set()  # messages some later message was linked to
        self.conversation_words: list[set[str]] = []
        # conversation -> its shared-words feature (or -1) for the message being linked
        self.conversation_word_feature: dict[int, int] = {}

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
            seen = Seen("", message.ts, None, frozenset(), frozenset(), False, True, 0, False)
            self.seen.append(seen)
            return seen
        key = message.author.casefold()
        text = message.text
        folded = text.casefold()
        addressed = self._resolve_address(text, key)
        known = self.last_by_author
        names = {
            token for token in map(_strip_sigil, _NAME_TOKEN.findall(folded)) if token in known
        }
        names.discard(key)
        if addressed:
            names.add(addressed)
        tokens = _WORD.findall(folded)
        words = frozenset(t for t in tokens if t not in STOPWORDS and t not in known and len(t) > 1)
        seen = Seen(
            key,
            message.ts,
            addressed,
            frozenset(names),
            words,
            "?" in text,
            False,
            len(tokens),
            _THANKS.search(folded) is not None,
        )
        self.seen.append(seen)
        self.conversation_word_feature.clear()
        return seen

    def conversation_overlap(self, conversation: int, words: frozenset[str]) -> int:
        """The shared-words feature of the message being linked with a whole conversation, -1
        for none (cached: the candidates of one conversation share it)."""
        feature = self.conversation_word_feature.get(conversation)
        if feature is None:
            shared = words & self.conversation_words[conversation]
            feature = -1
            if shared:
                score = sum(self.rarity(word) for word in shared)
                feature = CONVERSATION_WORDS[bisect_left(_WORD_BINS, score)]
            self.conversation_word_feature[conversation] = feature
        return feature

    def commit(self, parent: int | None) -> None:
        """Record the message last read, answering `parent` (None: a new conversation), as part
        of the channel's past."""
        index = len(self.seen) - 1
        seen = self.seen[index]
        if parent is not None and not 0 <= parent < index:
            parent = None
        self.parent_of.append(parent)
        if parent is None:
            conversation = len(self.conversation_last)
            self.conversation_first.append(index)
            self.conversation_last.append(index)
            self.conversation_authors.append(set())
            self.conversation_words.append(set())
        else:
            conversation = self.conversation_of[parent]
            self.conversation_last[conversation] = index
            self.answered.add(parent)
        self.conversation_of.append(conversation)
        if seen.system:
            return
        self.conversation_authors[conversation].add(seen.key)
        self.conversation_words[conversation].update(seen.words)
        key = seen.key
        talked = self.talked
        for name in seen.mentions:
            talked.setdefault(key, {})[name] = index
            talked.setdefault(name, {})[key] = index
        self.last_by_author[key] = index
        self.first_by_author.setdefault(key, index)
        self.document_frequency.update(seen.words)
        self.messages_read += 1

    def rarity(self, word: str) -> float:
        """Inverse document frequency of `word` in the channel read so far."""
        return math.log((self.messages_read + 1) / (self.document_frequency[word] + 1))


# Features are small integers (an index into NAMES), so a candidate's score is one C-level sum
# over a list of weights; the names are what weights.json stores.
NAMES: list[str] = []


def _feature(name: str) -> int:
    NAMES.append(name)
    return len(NAMES) - 1


def _features(prefix: str, count: int) -> tuple[int, ...]:
    return tuple(_feature(f"{prefix}{i}") for i in range(count))


_NEAR_SUFFIXES = ("@1", "@3", "@10", "@far")


def _relation(name: str) -> int:
    """A feature and its four distance conjunctions, at ids base, base+1..base+4: an addressed
    message answering the message just before means something else than one 30 lines up."""
    base = _feature(name)
    for suffix in _NEAR_SUFFIXES:
        _feature(name + suffix)
    return base


_SIZE_BINS = (1, 2, 5)
_BUSY_BINS = (0, 2, 5, 10)  # spoken messages in the BUSY_SECONDS before
BUSY_SECONDS = 120

SELF = _feature("self")
SELF_ADDRESSED = _feature("self:addressed")
SELF_MENTIONS = _feature("self:mentions")
SELF_QUESTION = _feature("self:question")
SELF_FIRST = _feature("self:first_from_author")
SELF_START = _feature("self:channel_start")
SELF_LEN = _features("self:len", len(_LEN_BINS) + 1)
SELF_GAP = _features("self:gap", len(_GAP_BINS) + 1)
SELF_AUTHOR_GAP = _features("self:author_gap", len(_GAP_BINS) + 1)
SELF_BUSY = _features("self:busy", len(_BUSY_BINS) + 1)
SELF_THANKS = _feature("self:thanks")

DIST = _features("dist", len(_DIST_BINS) + 1)
GAP = _features("gap", len(_GAP_BINS) + 1)
PEOPLE = _features("conversation_people", len(_SIZE_BINS) + 1)
CAND_LATEST = _relation("cand_latest_of_author")
CAND_ADDRESSES_OTHER = _feature("cand_addresses_other")
CAND_QUESTION = _feature("cand_question")
BOTH_QUESTION = _feature("both_question")
CAND_FIRST = _feature("cand_first_from_author")
ADJACENT_UNADDRESSED = _feature("adjacent_unaddressed")
SAME_AUTHOR_LATEST = _relation("same_author_latest")
SAME_AUTHOR = _relation("same_author")
ADDRESSES_CAND_LATEST = _relation("addresses_cand_latest")
ADDRESSES_CAND_AUTHOR = _relation("addresses_cand_author")
MENTIONS_CAND_AUTHOR = _relation("mentions_cand_author")
ADDRESSES_OTHER = _relation("addresses_other")
CAND_ADDRESSES_AUTHOR = _relation("cand_addresses_author")
CAND_MENTIONS_AUTHOR = _relation("cand_mentions_author")
PAIR_TALKED = _relation("pair_talked")
WORDS = tuple(_relation(f"words{i}") for i in range(len(_WORD_BINS) + 1))
CAND_ENDS = _relation("cand_ends_conversation")
AUTHOR_IN_CONVERSATION = _relation("author_in_conversation")
ADDRESSED_IN_CONVERSATION = _relation("addressed_in_conversation")
CAND_ALONE_QUESTION = _relation("cand_alone_question")
CAND_ANSWERS_AUTHOR = _relation("cand_answers_author")  # turn taking: j answered i's author
# The conversation the author (or the person they address) was last in: people carry on there.
IN_AUTHORS_LAST_CONVERSATION = _relation("in_authors_last_conversation")
IN_ADDRESSEDS_LAST_CONVERSATION = _relation("in_addresseds_last_conversation")
CAND_LONG = _feature("cand_long")
CONVERSATION_WORDS = tuple(_relation(f"conversation_words{i}") for i in range(len(_WORD_BINS) + 1))
# "thanks" goes to whoever addressed the author, rarely to the author's own message.
THANKS_HELPER = _relation("thanks_cand_addressed_author")
THANKS_SAME_AUTHOR = _feature("thanks_same_author")
# The author spoke after the candidate (elsewhere: in another conversation): people seldom go
# back past their own last word, unless they were busy in another conversation meanwhile.
AUTHOR_SPOKE_SINCE = _relation("author_spoke_since")
AUTHOR_SPOKE_ELSEWHERE = _feature("author_spoke_since_elsewhere")
CAND_ANSWERED = _relation("cand_answered")  # a later message was already linked to it
CAND_SHORT = _feature("cand_short")  # "hi", "lol": two words or fewer
# Distance means something else for an addressed message (the name finds the parent), and a
# gap something else for the same author continuing.
DIST_ADDRESSED = _features("dist_addressed", len(_DIST_BINS) + 1)
GAP_SAME_AUTHOR = _features("gap_same_author", len(_GAP_BINS) + 1)
_RECENT_BINS = (0, 1, 3, 7, 15, 31)  # messages since the candidate's conversation last spoke
CONVERSATION_RECENT = _features("conversation_recent", len(_RECENT_BINS) + 1)
ANSWERS_QUESTION = _relation("answers_question")  # another author's question, no question back


def self_features(state: ChannelState, index: int) -> list[int]:
    """Features of "message `index` starts a conversation" (state: read up to `index`)."""
    seen = state.seen[index]
    features = [SELF, SELF_LEN[bisect_left(_LEN_BINS, seen.length)]]
    if seen.addressed:
        features.append(SELF_ADDRESSED)
    elif seen.mentions:
        features.append(SELF_MENTIONS)
    if seen.question:
        features.append(SELF_QUESTION)
    if seen.thanks:
        features.append(SELF_THANKS)
    features.append(SELF_BUSY[bisect_left(_BUSY_BINS, _recent_spoken(state, index))])
    own = state.last_by_author.get(seen.key)
    if own is None:
        features.append(SELF_FIRST)
    else:
        features.append(SELF_AUTHOR_GAP[bisect_left(_GAP_BINS, seen.ts - state.seen[own].ts)])
    previous = _previous_spoken(state, index)
    if previous is None:
        features.append(SELF_START)
    else:
        features.append(SELF_GAP[bisect_left(_GAP_BINS, seen.ts - state.seen[previous].ts)])
    return features


def _recent_spoken(state: ChannelState, index: int) -> int:
    """Spoken messages in the BUSY_SECONDS before `index`: in a busy channel a message is less
    often a new conversation than the same gap in a quiet one suggests."""
    now = state.seen[index].ts
    count = 0
    for earlier in range(index - 1, max(-1, index - WINDOW - 1), -1):
        other = state.seen[earlier]
        if now - other.ts > BUSY_SECONDS:
            break
        count += not other.system
    return count


def _previous_spoken(state: ChannelState, index: int) -> int | None:
    for earlier in range(index - 1, max(-1, index - WINDOW - 1), -1):
        if not state.seen[earlier].system:
            return earlier
    return None


def option_features(state: ChannelState, index: int, options: Sequence[int]) -> list[list[int]]:
    """Features of "message `index` answers message `candidate`" for each candidate of
    `options`, in order (state: read, not committed, up to `index`). Written for speed:
    it runs for every candidate of every message (about 36 per spoken message), so what
    depends on the message alone (its fields, its author's and addressee's latest
    conversation, the rarity of its words) is looked up once, and what depends on the
    candidate's conversation once per conversation, not once per candidate. Each list holds
    the same ids in the same order whatever the speed-up: the model sums the weights in that
    order, and another order could change a float and so a tie."""
    seen = state.seen
    message = seen[index]
    key, addressed, mentions, words = (
        message.key,
        message.addressed,
        message.mentions,
        message.words,
    )
    ts, thanks, question = message.ts, message.thanks, message.question
    latest_of = state.last_by_author.get
    first_of = state.first_by_author.get
    talked_with = state.talked.get(key, {}).get
    conversation_of = state.conversation_of
    parent_of = state.parent_of
    answered_set = state.answered
    own = latest_of(key)
    own_conversation = -1 if own is None else conversation_of[own]
    addressed_conversation = -1
    if addressed is not None:
        theirs = latest_of(addressed)
        if theirs is not None:
            addressed_conversation = conversation_of[theirs]
    # The same floats as `state.rarity` per shared word: the channel does not change while
    # one message is linked.
    rarity = {word: state.rarity(word) for word in words}.__getitem__
    facts = _ConversationFacts(state, index, words, addressed, own_conversation)
    facts_of = facts.get
    result = []
    for candidate in options:
        other = seen[candidate]
        other_key = other.key
        other_addressed = other.addressed
        same = other_key == key
        distance = index - candidate
        near = 1 if distance == 1 else 2 if distance <= 3 else 3 if distance <= 10 else 4
        gap = bisect_left(_GAP_BINS, ts - other.ts)
        features = [DIST[bisect_left(_DIST_BINS, distance)], GAP[gap]]
        relations = []
        is_latest = latest_of(other_key) == candidate
        if is_latest:
            relations.append(CAND_LATEST)
        if same:
            relations.append(SAME_AUTHOR_LATEST if is_latest else SAME_AUTHOR)
            features.append(GAP_SAME_AUTHOR[gap])
            if thanks:
                features.append(THANKS_SAME_AUTHOR)
        elif thanks and (other_addressed == key or key in other.mentions):
            relations.append(THANKS_HELPER)
        if addressed:
            features.append(DIST_ADDRESSED[bisect_left(_DIST_BINS, distance)])
        if addressed == other_key:
            relations.append(ADDRESSES_CAND_LATEST if is_latest else ADDRESSES_CAND_AUTHOR)
        elif other_key in mentions:
            relations.append(MENTIONS_CAND_AUTHOR)
        elif addressed:
            relations.append(ADDRESSES_OTHER)
        if other_addressed == key:
            relations.append(CAND_ADDRESSES_AUTHOR)
        elif key in other.mentions:
            relations.append(CAND_MENTIONS_AUTHOR)
        elif other_addressed and not same:
            features.append(CAND_ADDRESSES_OTHER)
        talked = talked_with(other_key)
        if talked is not None and index - talked <= WINDOW:
            relations.append(PAIR_TALKED)
        other_question = other.question
        if other_question:
            features.append(BOTH_QUESTION if question else CAND_QUESTION)
        if first_of(other_key) == candidate:
            features.append(CAND_FIRST)
        if words and other.words and not words.isdisjoint(other.words):
            score = sum(map(rarity, words & other.words))
            relations.append(WORDS[bisect_left(_WORD_BINS, score)])
        conversation = conversation_of[candidate]
        fact = facts_of(conversation) or facts.make(conversation)
        features.append(fact.recent)
        if other_question and not question and not same:
            relations.append(ANSWERS_QUESTION)
        if fact.last == candidate:
            relations.append(CAND_ENDS)
            if other_question and fact.first == candidate:
                relations.append(CAND_ALONE_QUESTION)
        answered = parent_of[candidate]
        if answered is not None and not same and seen[answered].key == key:
            relations.append(CAND_ANSWERS_AUTHOR)
        if fact.overlap >= 0:
            relations.append(fact.overlap)
        if fact.authors_last:
            relations.append(IN_AUTHORS_LAST_CONVERSATION)
        if own is not None and own > candidate and not same:
            relations.append(AUTHOR_SPOKE_SINCE)
            if own_conversation != conversation:
                features.append(AUTHOR_SPOKE_ELSEWHERE)
        if candidate in answered_set:
            relations.append(CAND_ANSWERED)
        if addressed_conversation == conversation:
            relations.append(IN_ADDRESSEDS_LAST_CONVERSATION)
        length = other.length
        if length > _LEN_BINS[-1]:
            features.append(CAND_LONG)
        elif length <= 2:
            features.append(CAND_SHORT)
        if not same and fact.author_in:
            relations.append(AUTHOR_IN_CONVERSATION)
        if fact.addressed_in:
            relations.append(ADDRESSED_IN_CONVERSATION)
        features.append(fact.people)
        if distance == 1 and not addressed:
            features.append(ADJACENT_UNADDRESSED)
        for relation in relations:
            features.append(relation)
            features.append(relation + near)
        result.append(features)
    return result


@dataclass(frozen=True, slots=True)
class _Conversation:
    """What `option_features` reads of a candidate's conversation, for the message linked."""

    first: int
    last: int
    recent: int  # CONVERSATION_RECENT feature
    people: int  # PEOPLE feature
    overlap: int  # CONVERSATION_WORDS feature, -1 for none
    authors_last: bool  # the author's latest message is in it
    author_in: bool  # the author has spoken in it
    addressed_in: bool  # the addressed author has spoken in it


class _ConversationFacts(dict[int, _Conversation]):
    """Per-conversation facts for one message, made on first use."""

    def __init__(
        self,
        state: ChannelState,
        index: int,
        words: frozenset[str],
        addressed: str | None,
        own_conversation: int,
    ) -> None:
        super().__init__()
        self.state, self.index, self.words = state, index, words
        self.addressed, self.own_conversation = addressed, own_conversation
        self.key = state.seen[index].key

    def make(self, conversation: int) -> _Conversation:
        state = self.state
        last = state.conversation_last[conversation]
        authors = state.conversation_authors[conversation]
        words = self.words
        fact = _Conversation(
            state.conversation_first[conversation],
            last,
            CONVERSATION_RECENT[bisect_left(_RECENT_BINS, self.index - 1 - last)],
            PEOPLE[bisect_left(_SIZE_BINS, len(authors))],
            state.conversation_overlap(conversation, words) if words else -1,
            self.own_conversation == conversation,
            self.key in authors,
            self.addressed is not None and self.addressed in authors,
        )
        self[conversation] = fact
        return fact


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
            other.key == message.key
            or other.key in message.mentions
            or message.key in other.mentions
        ):
            found.append(candidate)
    return found
