"""Who talks to whom: addressing ("nick: ...", "@nick"), agreement replies, small talk, and
the rule that decides whether a question was answered.

Answer rule (a question of author A in message Q is answered when a later message M of the
window, by someone other than A, satisfies one of):
1. M replies to Q (`reply_to == Q`);
2. M addresses A by name ("A: ...", "A, ...", "@A") within `ADDRESS_HORIZON` messages of Q
   and is not itself only a question back (a clarifying question does not answer);
3. M comes within `ADJACENT_HORIZON` messages of Q, replies to and addresses nobody else, is
   not a question, and either is by the person Q was put to (Q replies to or addresses them)
   or shares at least two content words with Q (topical continuation).
A question is also resolved when A, within `2 * ADJACENT_HORIZON` messages, says it is solved
("thanks", "fixed", "never mind") addressing nobody or the person asked. Only messages within
`ANSWER_WINDOW` of Q count. The first M found is the answer.

In a threaded window (`WindowMessage.conversation` set) the rule is the conversation's instead:
the first later message of Q's conversation by someone other than A that is not only a question
answers it, and nothing outside the conversation does (`_answer_in_conversation`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from runner.core.window import WindowMessage
from runner.extract.offline.text import FoldedPattern, content_words, squash, without_urls
from runner.grounding.addressing import LEADING_ADDRESS

ADDRESS_HORIZON = 40
ADJACENT_HORIZON = 5
ANSWER_WINDOW = timedelta(hours=24)

_LEADING_MENTION = re.compile(r"^\s*@([\w.\-#]{2,40})")
_LEADING_MENTION_SEPARATED = re.compile(r"^\s*@[\w.\-#]{2,40}[\s:,]+")
_MENTION = re.compile(r"(?<![\w@])@([\w.\-#]{2,40})")
_AGREEMENT = re.compile(
    r"^\W*(?:agreed|agree|\+1|sounds good|sounds great|sgtm|lgtm|works for me|makes sense"
    r"|ship it|let'?s do (?:it|that|this)|do it|yes|yep|yup|yeah|sure|ok|okay|k|same|"
    r"fine by me|fine with me|go for it|approved|absolutely|definitely|perfect|merged|"
    r"that (?:would|will|should) work|that works|"
    r"👍|✅|💯|🙌|👌)(?!\w)",
    re.IGNORECASE,
)
_STRONG_AGREEMENT = FoldedPattern(
    r"\b(?:agreed|agree|sounds good|sgtm|lgtm|works for me|makes sense|ship it|"
    r"let'?s do (?:it|that)|go for it|fine by me|that (?:would|will|should) work|that works"
    r"|merged|approved)\b|\+1|👍|✅",
    re.IGNORECASE,
)
# A whole message that only assents ("ok", "sure."), with no other words.
_BARE_ASSENT = re.compile(
    r"(?i)^\W*(?:ok(?:ay)?|k|sure|yes|yep|yup|yeah|agreed|deal|fine|right|will do)\W*$"
)
_RESOLVED = FoldedPattern(
    r"\b(?:thanks|thank you|thx|ty|solved|fixed|works now|that worked|got it|never ?mind|"
    r"nvm|figured it out|sorted)\b",
    re.IGNORECASE,
)
_SOCIAL = FoldedPattern(
    r"\b(?:lunch|coffee|breakfast|dinner|beer|beers|drinks|pizza|weekend|vacation|holiday|"
    r"birthday|movie|football|soccer|game night|how are you|how's it going|hows it going|"
    r"what's up|whats up|good morning|good night|gm|gn|anyone here|anybody here|anyone around|"
    r"hello|hey all|hi all|hi everyone|cake|snacks|weather|sunny|rain)\b",
    re.IGNORECASE,
)


def _name_keys(author: str) -> list[str]:
    """Ways a display name is written when someone addresses its owner."""
    folded = author.casefold().strip()
    keys = [folded]
    base = folded.split("#", 1)[0].strip()
    if base:
        keys.append(base)
        first = re.split(r"[\s_\-|]+", base)[0]
        if len(first) >= 3:
            keys.append(first)
    return keys


@dataclass(frozen=True)
class Participants:
    """The authors of a window or chunk, looked up by how people address them."""

    by_key: dict[str, str]
    # `strip_address` of texts already seen: the rules strip each sentence's addressee once per
    # pattern they try on it. Depends on `by_key` only, so it lives (and dies) with it.
    stripped: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # The sentence rules' answers (`patterns.decision`, `action`, ...), which depend on the
    # sentence and `by_key` only: the map asks them of each sentence for its items and again
    # for the item model's features.
    rules: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, messages: Sequence[WindowMessage]) -> Participants:
        by_key: dict[str, str] = {}
        ambiguous: set[str] = set()
        # Each author once, in order of first appearance: a repeat finds its own name where it
        # left it and changes nothing (100,000 messages have a few hundred authors).
        for author in dict.fromkeys(message.author for message in messages):
            for key in _name_keys(author):
                known = by_key.get(key)
                if known is not None and known != author:
                    ambiguous.add(key)
                by_key.setdefault(key, author)
        for key in sorted(ambiguous):
            # A first name two people share addresses nobody in particular.
            if by_key[key].casefold() != key:
                del by_key[key]
        return cls(by_key)

    def lookup(self, name: str) -> str | None:
        return self.by_key.get(name.casefold().strip().rstrip(".:,"))

    def addressee(self, text: str) -> str | None:
        """The participant a message or sentence is addressed to by its first word, or None."""
        match = LEADING_ADDRESS.match(text)
        if match:
            found = self.lookup(match.group(1).lstrip("@"))
            if found:
                return found
        mention = _LEADING_MENTION.match(text)
        if mention:
            return self.lookup(mention.group(1)) or mention.group(1)
        return None

    def mentioned(self, text: str) -> list[str]:
        """Participants named with `@name` anywhere, plus the leading addressee."""
        names: list[str] = []
        lead = self.addressee(text)
        if lead:
            names.append(lead)
        for match in _MENTION.finditer(text):
            found = self.lookup(match.group(1))
            if found and found not in names:
                names.append(found)
        return names


def strip_address(text: str, participants: Participants) -> str:
    """`text` without a leading "nick: " / "@nick " addressee."""
    stripped = participants.stripped.get(text)
    if stripped is None:
        stripped = participants.stripped[text] = _strip_address(text, participants)
    return stripped


def _strip_address(text: str, participants: Participants) -> str:
    match = LEADING_ADDRESS.match(text)
    if match and participants.lookup(match.group(1).lstrip("@")):
        return text[match.end() :].lstrip()
    mention = _LEADING_MENTION_SEPARATED.match(text)
    if mention:
        return text[mention.end() :].lstrip()
    return text


def is_agreement(text: str) -> bool:
    """A short reply that agrees ("+1", "sounds good", "agreed, let's do it")."""
    flat = squash(text)
    if not flat or flat.endswith("?") or len(flat.split()) > 15:
        return False
    return bool(_AGREEMENT.match(flat) or _STRONG_AGREEMENT.search(flat))


def is_strong_agreement(text: str) -> bool:
    flat = squash(text)
    return bool(flat) and not flat.endswith("?") and bool(_STRONG_AGREEMENT.search(flat))


# Cached: a chunk asks this of each part's prose several times (decisions, topics, centrality),
# and the regex tries every alternative at every word. Small, as the repeats come close together.
@functools.lru_cache(maxsize=4096)
def is_social(text: str) -> bool:
    """Small talk: greetings, food, weekends. Never a decision, a question or a topic."""
    return bool(_SOCIAL.search(text))


def _is_question_only(text: str) -> bool:
    flat = squash(without_urls(text))
    return flat.endswith("?") and len(flat) < 80


@dataclass(frozen=True)
class Answer:
    message: WindowMessage
    rule: str  # "reply", "addressed", "adjacent" or "resolved_by_asker"


def find_answer(
    messages: Sequence[WindowMessage],
    index: int,
    participants: Participants,
    question_text: str,
) -> Answer | None:
    """The message answering the question in `messages[index]` (module docstring's rule)."""
    question = messages[index]
    if question.conversation is not None:
        return _answer_in_conversation(messages, index)
    asker = question.author
    # Whom the question was put to: the author of the message it replies to, or its addressee.
    by_id = {m.message_id: m for m in messages[max(0, index - ADDRESS_HORIZON) : index]}
    target = by_id[question.reply_to].author if question.reply_to in by_id else None
    target = target or participants.addressee(question.normalized_text)
    question_words = set(content_words(question_text))
    for offset, later in enumerate(messages[index + 1 : index + 1 + ADDRESS_HORIZON], start=1):
        if later.ts - question.ts > ANSWER_WINDOW:
            break
        text = later.normalized_text
        addressed = participants.addressee(text)
        if later.author == asker:
            if (
                offset <= 2 * ADJACENT_HORIZON
                and later.reply_to is None
                and addressed in (None, target)
                and _RESOLVED.search(text)
                and not _is_question_only(text)
            ):
                return Answer(later, "resolved_by_asker")
            continue
        if later.reply_to == question.message_id:
            return Answer(later, "reply")
        if addressed == asker or asker in participants.mentioned(text):
            # If the asker has since addressed this person, this is most likely the reply to
            # that newer message, not to the question.
            talking = any(
                m.author == asker and participants.addressee(m.normalized_text) == later.author
                for m in messages[index + 1 : index + offset]
            )
            if not talking and not _is_question_only(text):
                return Answer(later, "addressed")
            continue
        if offset > ADJACENT_HORIZON or later.reply_to is not None or addressed is not None:
            continue
        if _is_question_only(text) or text.rstrip().endswith("?"):
            continue
        if target is not None and later.author == target:
            return Answer(later, "asked_back")
        if len(question_words & set(content_words(text))) >= 2:
            return Answer(later, "adjacent")
    return None


def _answer_in_conversation(messages: Sequence[WindowMessage], index: int) -> Answer | None:
    """In a threaded window (its conversations contiguous, `runner.conversations.threads`), a question
    is answered by the first later message of its own conversation, within `ANSWER_WINDOW`,
    from someone other than the asker that is not only a question back; or resolved by the
    asker saying so. Nothing outside the conversation answers it."""
    question = messages[index]
    # Read in place: slicing off the rest of a 100,000-message window for each question made
    # the reduce's question pass quadratic.
    for offset in range(1, len(messages) - index):
        later = messages[index + offset]
        if later.conversation != question.conversation:
            break
        if later.ts - question.ts > ANSWER_WINDOW:
            break
        text = later.normalized_text
        if later.author == question.author:
            if (
                offset <= 2 * ADJACENT_HORIZON
                and _RESOLVED.search(text)
                and not _is_question_only(text)
            ):
                return Answer(later, "resolved_by_asker")
            continue
        if not _is_question_only(text) and not text.rstrip().endswith("?"):
            return Answer(later, "conversation")
    return None


def is_bare_assent(text: str) -> bool:
    """A message that is only an assent ("ok", "sure"): it agrees with what came just before."""
    return bool(_BARE_ASSENT.match(text))
