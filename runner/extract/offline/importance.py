"""How much a conversation is worth reading: a small linear model over features a reader would
name (a problem asked and answered or resolved, a decision, an announcement, people taking
part, links and code shared, a regular helper's statement), minus what makes a conversation
noise (greetings, meals, leaving, thanks, jokes, bot lines).

`importance` is the log-odds that a conversation is one the gold set's annotators listed
(a topic, or holding a decision, action item or open question): `BIAS` plus the weighted
features, every feature in [0, 1]. The weights were fitted by `scripts/fit_importance.py`
(logistic regression on the threaded gold windows of docs/gold-set, L2-penalised) and rounded;
the script also scores each window with weights fitted on the other windows (never on the
window scored). A conversation below `OVERVIEW_MIN` is not overview or highlight material, and
a conversation opened by noise never is, whatever its score.

Pure and deterministic: regexes and counts over the conversation's own messages.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.core.window import WindowMessage
from runner.extract.offline.artifacts import command_like
from runner.extract.offline.patterns import DECISION_MARKER, firm_decision
from runner.extract.offline.text import FoldedPattern, content_words, squash, without_urls

# Greetings, meals, leaving, thanks, laughter, bot and join/part lines: a message that is only
# this is noise. Checked on the whole message (anchored), so "thanks, that fixed my X config"
# is not noise; `is_social` (meals, weekends, weather) is checked anywhere in short messages.
_NOISE_ONLY = re.compile(
    r"(?ix)^\W*(?:"
    r"(?:hi|hello|hey|hiya|yo|howdy|morning|good\s+(?:morning|afternoon|evening|night)|gm|gn"
    r"|greetings|welcome(?:\s+back)?|wb|o/|\\o)"
    r"|(?:thanks?|thank\s+you|thx|ty|tyvm|cheers|much\s+appreciated|np|no\s+problem|you'?re\s+"
    r"welcome|yw)"
    r"|(?:bye|goodbye|cya|see\s+(?:you|ya)|later|brb|afk|back|g2g|gtg|gotta\s+go|got\s+to\s+go"
    r"|have\s+to\s+go|(?:i'?m\s+)?off(?:\s+to\s+\w+)?|good\s*night|nite|night)"
    r"|(?:lol|lmao|rofl|haha\w*|hehe\w*|heh|:\)|:d|:p|;\)|xd|\^\^)"
    r"|(?:ok(?:ay)?|k|yes|yeah|yep|no|nope|sure|cool|nice|great|awesome|wow|oh|ah|hmm+|right)"
    r")(?:[\s,!.?]+(?:all|everyone|guys|folks|people|man|dude|again|so\s+much|a\s+lot|lol|"
    r"haha|:\)|:d|!+|\w{2,20}))?\W*$"
)
_LEAVING = FoldedPattern(
    r"(?i)\b(?:(?:i\s+)?(?:have|had|got|gotta)\s+to\s+go|gotta\s+go|going\s+(?:to\s+)?(?:bed|sleep|"
    r"home)|off\s+to\s+(?:bed|sleep|work|lunch|dinner)|be\s+right\s+back|brb|bbl|afk|good\s*night"
    r"|see\s+(?:you|ya)\s+(?:all|later|tomorrow)|bye\s+(?:all|everyone))\b"
)
_FOOD = FoldedPattern(
    r"(?i)\b(?:dinner|lunch|breakfast|supper|meal|eat(?:ing)?|ate|food|pizza|sandwich|micr?owave"
    r"|coffee|tea|beer|snack|hungry|cook(?:ing)?)\b"
)
_JOKE = re.compile(r"(?i)(?:\b(?:lol|lmao|rofl|haha\w*|hehe\w*|j/k|jk)\b|:\)|:D|;\)|xD)")
_BOT_LINE = re.compile(
    r"(?i)^\W*(?:\*{1,3}\s*\S+\s+(?:has\s+)?(?:joined|left|quit|parted)\b|\S+\s+(?:has\s+)?(?:joined"
    r"|left|quit)\s+(?:the\s+)?(?:channel|room|#)|(?:join|part|quit|mode|topic)\s*[:\-])"
)
_BOT_AUTHOR = FoldedPattern(
    r"(?i)(?:bot|\[bot\]|ubottu|ubotu|chanserv|nickserv|github|travis|jenkins)$"
)
_QUESTION_OPENING = re.compile(
    r"(?i)^(?:(?:how|what|why|where|when|which|who)\b|(?:is|are|does|do|did|can|could|should"
    r"|would|will|has|have|was|were)\s+(?:i|you|we|it|there|anyone|anybody|someone|somebody|this"
    r"|that|these|my|the|any)\b|anyone\b|anybody\b|any idea)"
)
_PROBLEM = FoldedPattern(
    r"(?i)\b(?:error|errors|fail\w*|broken|crash\w*|doesn'?t work|does not work|not working|won'?t"
    r"|can'?t|cannot|unable|issue|problem|bug|exception|timeout|timed out|refused|denied|stuck"
    r"|hangs?|freez\w*|missing|wrong|segfault|traceback|warning)\b"
)
_RESOLVED = FoldedPattern(
    r"(?i)\b(?:solved|fixed|works now|working now|that worked|it worked|works!|got it working|"
    r"figured it out|sorted|did the trick|that did it|that was it|problem solved|success)\b"
)
_THANKS = FoldedPattern(r"(?i)\b(?:thanks|thank you|thx|ty|cheers)\b")
_ANNOUNCEMENT = FoldedPattern(
    r"(?i)\b(?:released|release of|(?:is|are) (?:now )?out\b|now available|announc\w*|launched"
    r"|just landed|pushed (?:a |the )?fix|fixed in|has been merged|(?:is|was) merged|deprecat\w*|new version|changelog"
    r"|release notes|security (?:update|advisory)|psa|heads up|we(?:'ve| have) (?:shipped|moved"
    r"|released)|(?:is|will be) (?:down|offline) for maintenance)\b"
)
_PLACEHOLDER_LINK = re.compile(r"\[<-(?:LINK|ISSUE)->\]|\[?<-?URL-?>\]?")
_PLACEHOLDER_CODE = re.compile(r"\[<-CODE->\]|```|`[^`\n]+`")
_URL = re.compile(r"(?i)(?:https?|ftp)://\S+|\bwww\.\S+")
_TECH = re.compile(
    r"(?:/[\w.\-]+/[\w.\-/]*|\b\w+\.(?:conf|cfg|ini|ya?ml|json|sh|py|js|list|log|d)\b|\b[a-z]+-[a-z]+"
    r"\b|\b\d+\.\d+(?:\.\d+)?\b|--?\w[\w-]+|\b(?:sudo|apt-get|apt|dpkg|grep|docker|kubectl|npm"
    r"|pip|git|make|gcc|kernel|driver|module|package|config\w*|install\w*|server|daemon|mount"
    r"|partition|grub|xorg|version)\b)"
)

# The features in model order. Each is in [0, 1]; see `features`.
FEATURES = (
    "participants",
    "size",
    "question",
    "answered",
    "resolved",
    "problem",
    "decision",
    "announcement",
    "links",
    "code",
    "helper",
    "technical",
    "noise",
)
# Fitted by scripts/fit_importance.py on the gold windows (see the module docstring), rounded
# to two decimals. A positive weight raises the log-odds that a reader wants the conversation.
WEIGHTS: Mapping[str, float] = {
    "participants": 1.2,
    "size": 0.8,
    "question": 0.3,
    "answered": 0.6,
    "resolved": 0.5,
    "problem": 0.4,
    "decision": 1.0,
    "announcement": 0.8,
    "links": 0.5,
    "code": 0.5,
    "helper": 0.4,
    "technical": 1.0,
    "noise": -3.0,
}
BIAS = -1.5
# Log-odds a conversation needs to be told in an overview or highlight (probability 0.5).
OVERVIEW_MIN = 0.0


def is_noise(text: str) -> bool:
    """A message that tells a reader nothing about the channel's work: a greeting, thanks, a
    goodbye or "brb", a laugh, a meal, a bot's or the server's join/part line."""
    flat = squash(without_urls(text))
    if not flat or _BOT_LINE.match(flat) or _NOISE_ONLY.match(flat):
        return True
    words = content_words(flat)
    if len(words) <= 8 and (_LEAVING.search(flat) or _FOOD.search(flat)):
        return True
    # Laughter with hardly anything else ("lol that's so true").
    return len(words) <= 4 and bool(_JOKE.search(flat))


def informative_opening(text: str) -> bool:
    """An opening worth quoting in an overview: it asks, states a problem, announces or
    settles something, in at least four content words, and is not noise."""
    flat = squash(without_urls(text))
    if is_noise(flat) or len(set(content_words(flat))) < 4:
        return False
    return bool(
        _asks(flat) or _PROBLEM.search(flat) or _ANNOUNCEMENT.search(flat) or firm_decision(flat)
    )


# A question told on its own (an overview's or a highlight's "Left open") names its subject in
# this many distinct content words at least; shorter ones lean on a context the reader lacks.
SUBJECT_WORDS = 4
# A snippet worth a highlight is a block, or a line of this length: a short one-line command
# ("ps -aux", "docker inspect <container_id>") is something a reader types, not reads.
SNIPPET_CHARS = 40


def names_its_subject(question: str) -> bool:
    """A question a reader can place without its conversation ("why is the bind9 cache only
    hit under screen?"), not one leaning on it ("I must do it on every host?")."""
    return len(set(content_words(question))) >= SUBJECT_WORDS


def worth_quoting(snippet: str | None) -> bool:
    """A verbatim snippet worth a highlight: several lines, or one line of `SNIPPET_CHARS`
    that is not an error it printed ("./setup.run: Permission denied" is a symptom, not
    something to reuse)."""
    text = (snippet or "").strip()
    if "\n" in text:
        return True
    return len(text) >= SNIPPET_CHARS and not _PROBLEM.search(text)


# One person's own plan or choice ("I just decided to clone disk by disk", "I'm going to
# reinstall"): what they will do, not what the channel settled.
_PERSONAL_PLAN = re.compile(
    r"(?i)^\W*(?:\S+[:,]\s+)?(?:(?:however|so|ok(?:ay)?|well|now|anyway|but|and)[\s,]+)?"
    r"(?:as\s+we\s+speak[\s,]+)?(?:i|i'm|im|i've|i'll)\s+(?:just\s+|now\s+|have\s+|had\s+"
    r"|finally\s+)?(?:decided|chose|chosen|going\s+to|gonna|will|want|plan\w*|think\s+i'?ll)\b"
)
# A reply that opens by echoing a few words back as a question ("slow wifi? i use the same
# one, works fine") asks for more, it does not answer.
_ECHO_QUESTION = re.compile(r"^\W*(?:\S+\s+){0,2}\S+\?(?:\s|$)")


def personal_plan(text: str) -> bool:
    """The writer's own plan or choice, not the group's decision."""
    return bool(_PERSONAL_PLAN.match(squash(text)))


def echo_question(text: str) -> bool:
    """A reply opening with a question of at most three words: a clarification, no answer."""
    return bool(_ECHO_QUESTION.match(squash(without_urls(text))))


def is_bot(author: str, text: str) -> bool:
    return bool(_BOT_AUTHOR.search(author.strip()) or _BOT_LINE.match(squash(text)))


def _noise(author: str, text: str) -> bool:
    """Noise by its words (`is_noise`) or by who wrote it (`is_bot`)."""
    return is_noise(text) or is_bot(author, text)


def helpers(messages: Sequence[WindowMessage], conversation_of: Mapping[str, str]) -> set[str]:
    """The window's regular helpers: authors who wrote in the conversations of at least three
    other people, and in at least a tenth of the conversations with two or more people (at
    most the top five). On a channel without roles, this is who answers with authority."""
    openers: dict[str, str] = {}
    joined: dict[str, set[str]] = {}
    for message in messages:
        key = conversation_of.get(message.message_id)
        if key is None:
            continue
        opener = openers.setdefault(key, message.author)
        if message.author != opener:
            joined.setdefault(message.author, set()).add(key)
    shared = {key for people in joined.values() for key in people}
    if not shared:
        return set()
    counted: Counter[str] = Counter()
    for author, keys in joined.items():
        others = {openers[k] for k in keys if openers[k] != author}
        if len(others) >= 3 and len(keys) * 10 >= len(shared):
            counted[author] = len(keys)
    return {author for author, _ in sorted(counted.items(), key=lambda a: (-a[1], a[0]))[:5]}


def _asks(text: str) -> bool:
    flat = squash(without_urls(text))
    return flat.endswith("?") or "? " in flat or bool(_QUESTION_OPENING.match(flat))


@dataclass(frozen=True)
class Importance:
    score: float  # log-odds (BIAS + weighted features)
    features: Mapping[str, float]
    noise_opening: bool  # opened by a greeting, thanks, goodbye, meal, joke or bot line

    @property
    def worth_telling(self) -> bool:
        """Overview and highlight material: scored above `OVERVIEW_MIN`, not opened by noise."""
        return self.score >= OVERVIEW_MIN and not self.noise_opening

    @property
    def earned(self) -> bool:
        """Holds what earns a window a HIGH signal: a decision, an announcement, or a problem
        or question answered by someone else."""
        f = self.features
        answered_problem = f["answered"] and (f["problem"] or f["question"] or f["resolved"])
        return self.worth_telling and bool(f["decision"] or f["announcement"] or answered_problem)


def features(members: Sequence[WindowMessage], helper_names: set[str]) -> dict[str, float]:
    """The features of one conversation (its messages in time order)."""
    if not members:
        return dict.fromkeys(FEATURES, 0.0)
    opener = members[0].author
    texts = [m.normalized_text for m in members]
    noise = [_noise(m.author, t) for m, t in zip(members, texts, strict=True)]
    authors = {m.author for m, n in zip(members, noise, strict=True) if not n}
    opening = [t for m, t in zip(members[:3], texts[:3], strict=True) if m.author == opener]
    question_at = next(
        (
            i
            for i, (m, t) in enumerate(zip(members, texts, strict=True))
            if m.author == opener and _asks(t)
        ),
        None,
    )
    answered = False
    resolved = False
    if question_at is not None:
        reply_at = next(
            (
                i
                for i in range(question_at + 1, len(members))
                if members[i].author != opener and not noise[i] and not _asks(texts[i])
            ),
            None,
        )
        answered = reply_at is not None
        if reply_at is not None:
            resolved = any(
                members[i].author == opener
                and (_RESOLVED.search(texts[i]) or _THANKS.search(texts[i]))
                for i in range(reply_at + 1, len(members))
            )
    substantive = [t for t, n in zip(texts, noise, strict=True) if not n]
    technical = sum(1 for t in substantive if _TECH.search(t))
    return {
        "participants": min(max(len(authors) - 1, 0), 4) / 4,
        "size": min(math.log2(len(members)) / 6, 1.0),
        "question": float(question_at is not None),
        "answered": float(answered),
        "resolved": float(resolved),
        "problem": float(any(_PROBLEM.search(t) for t in opening)),
        "decision": float(any(DECISION_MARKER.search(t) or firm_decision(t) for t in substantive)),
        "announcement": float(any(_ANNOUNCEMENT.search(t) for t in substantive)),
        "links": float(any(_URL.search(t) or _PLACEHOLDER_LINK.search(t) for t in texts)),
        "code": float(any(_PLACEHOLDER_CODE.search(t) or command_like(t) for t in texts)),
        "helper": float(any(m.author in helper_names and m.author != opener for m in members)),
        "technical": technical / max(1, len(substantive)),
        "noise": sum(noise) / len(members),
    }


def importance(
    members: Sequence[WindowMessage], helper_names: set[str], opening: WindowMessage | None = None
) -> Importance:
    """The conversation's score; `opening` is the message the overview would quote (its
    title's), by default its first."""
    values = features(members, helper_names)
    score = BIAS + sum(WEIGHTS[name] * values[name] for name in FEATURES)
    first = opening or (members[0] if members else None)
    noise_opening = first is not None and _noise(first.author, first.normalized_text)
    return Importance(score=score, features=values, noise_opening=noise_opening)
