"""Sentence patterns: is this sentence a decision, a proposal, an action item, a question worth
keeping, or a reusable tip? Each classifier returns the claim text (a cleaned-up quote of the
sentence, so it passes the support check) and a strength used for ranking, or None.

The patterns come from how teams write in chat and meetings: meeting-bot markers (`#agreed`,
`[action]`, `TODO`), decision verbs ("we decided", "let's go with", "settled on"), commitments
("I'll ...", "@ana can you ..."), and questions that end in "?" or open with an interrogative.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from runner.core.window import WindowMessage
from runner.extract.offline.text import (
    FoldedPattern,
    capitalize_first,
    content_words,
    squash,
    truncate_words,
    without_urls,
)
from runner.extract.offline.threads import Participants, is_social, strip_address

CLAIM_LIMIT = 500

DECISION_MARKER = re.compile(
    r"(?i)(?:\[(?:agreed|agreement|decision|decided)\]|#(?:agreed|agreement|decision|decided)\b"
    r"|^\W{0,3}(?:agreed|decision|decided)\s*:"
    # Agreement reached in chat: "agreed, X" / "ok agreed - X" (X must say something; a bare
    # "agreed." is an agreement reply, handled with the proposal it answers).
    r"|^\W{0,3}(?:(?:ok(?:ay)?|yes|yeah)[,!.]?\s+)?agreed\s*[,;.!\u2013\u2014-])\s*"
)
ACTION_MARKER = re.compile(
    r"(?:(?i:\[(?:action|action item|todo|ai)\])|(?i:#action)\b|^\W{0,3}(?i:action(?: item)?)\s*:"
    r"|^\W{0,3}AI:|\bTODO\b(?:\((?P<todo_owner>[^)]{1,40})\))?:?|^\s*-\s*\[ \])\s*"
)
INFO_MARKER = re.compile(r"(?i)(?:\[(?:info|fyi|note)\]|#info\b|^\W{0,3}(?:fyi|note|psa)\s*:)\s*")
TIP_MARKER = re.compile(
    r"(?i)^\W{0,3}(?:tip|pro ?tip|hint|heads up|gotcha|lesson learned|til|reminder)\s*[:\-—]\s*"
)
_DECISION_STRONG = FoldedPattern(
    r"(?i)\b(?:(?:we|we've|we have|team|everyone|all)\s+(?:\w+\s+)?(?:decided|agreed|settled)"
    r"|decided to|(?:the|our|final) decision (?:is|was)|^(?:the )?consensus (?:is|was)|settled on"
    r"|agreed (?:to|on|that|upon)|(?:let's|let us|we'll|we will|we're|we are|we're going to)"
    r"\s+(?:just\s+)?go(?:ing)? with|going forward|from now on|the plan is"
    r"|(?:we're|we are|we will|we'll)\s+(?:now\s+)?(?:switch|switching|move|moving|migrate|"
    r"migrating|stick|sticking|keep|keeping|ship|shipping|adopt|adopting|drop|dropping|"
    r"freeze|freezing|postpone|postponing|standardi[sz]e|pin|pinning|roll back|rolling back)\b"
    # A maintainer's "we'll do X" / "we're going to use X": the group's plan, stated.
    r"|(?:we'll|we will|we're going to|we are going to)\s+(?:just\s+)?(?:do|use|add|remove|merge"
    r"|release|revert|deprecate|require|support|drop|switch|go|make|ship|wait|tag|publish)\b"
    r"|(?:is|are) approved|signed off)"
)
_PROPOSAL = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|so|alright|right|then|and|yeah|yes)[,!.]?\s+)*(?:let's|let us|"
    r"we should|i propose|i suggest|proposal\s*:|suggestion\s*:|how about we|why don't we"
    r"|what if we|we could|i should|the plan is to|stop using)"
    r"(?!\w)"  # not \b: "proposal:" ends on a colon
)
_NEGATED_DECISION = FoldedPattern(
    r"(?i)\b(?:haven't|have not|hasn't|has not|didn't|did not|not yet|yet to|still need to|"
    r"can't|cannot|couldn't|not)\s+(?:\w+\s+)?(?:decided|decide|agreed|agree|settled|settle)"
)
_HEDGE = FoldedPattern(r"(?i)\b(?:maybe|perhaps|might|probably|possibly|not sure|i guess|unless)\b")
_SELF_COMMIT = re.compile(
    r"(?i)(?:^|[,;.!]\s*|\b(?:and|so|ok|okay|sure|yes|yep)[,!]?\s+)"
    r"(?P<lead>i'll|i will|i'm going to|i am going to|i'm gonna|i can take|i'm on it|i am on it"
    r"|let me)\s+(?P<rest>.+)"
)
_SELF_COMMIT_START = re.compile(
    r"(?i)^(?P<lead>i'll|i will|i'm going to|i am going to|i'm gonna|i can take|let me)\s+"
    r"(?P<rest>.+)"
)
_NOT_A_COMMITMENT = re.compile(
    r"(?i)^(?:be\b(?!\s+(?:doing|working|handling|taking|writing|updating|fixing))|see\b|think\b"
    r"|know\b|guess\b|never\b|just\b|probably\b|admit\b|say\b|tell you\b|bet\b|assume\b|have to"
    r" wait|wait\b|leave it\b|pass\b|miss\b|let you know\b|explain\b"
    # "I'll ask in #kde" defers the question; "I'll ask him to check this" takes a task on.
    r"|ask\b(?!\s+(?:him|her|them|the \w+|my \w+|our \w+)\s+to\b)|try\b(?! to)"
    r"|need\b|want\b|be back\b)"
)
# Taking up advice without restating it: "I'll try that now", "ok will do", "gonna try that",
# "I'll double check", "thanks, I ll look on to that" ("let me check" is a momentary step, not
# a commitment: docs/gold-set/GUIDELINE.md). The task is the advice
# it answers (the map step finds it); how much follows the verb is bounded in `takes_advice`.
_TAKES_ADVICE = re.compile(
    r"(?i)(?:^|[,;.!:]\s*|\bbut\s+)\W*(?:(?:ok(?:ay)?|k|sure|yes|yeah|yep|alright|right|cool|great"
    r"|nice|good idea|thanks"
    r"|thank you|thx|hmm|ah|oh|i see|i understand)\W+)*"
    r"(?:(?:then\s+|so\s+)?(?:i'll|i will|i ll|ill|will|i'm gonna|im gonna|gonna|i'm going to"
    r"|i am going to)\s+(?:just\s+|now\s+|also\s+)?(?:give (?:it|that|this) a (?:try|shot|go)"
    r"|try|check|test|look|double[- ]?check|have a look|take a look|do)\b|will do\b)"
    r"(?P<rest>[^.!?;]*)"
)
_COMMIT_ONLY = re.compile(
    r"(?i)^\W*(?:on it|will do|i'll take (?:it|this|that)|i can take (?:it|this|that)|"
    r"i'll do (?:it|this|that)|i'll handle (?:it|this|that)|mine|i got (?:it|this)|i'm on it|"
    r"sure,? i'll do it|i can do (?:it|that))\W*$"
)
_REQUEST = re.compile(
    r"(?i)^(?:(?:hey|hi|ok|so)[,!]?\s+)?(?:(?:can|could|would) you(?: please)?|please)\s+"
    r"(?P<rest>.+)"
)
_WORK_VERB = re.compile(
    r"(?i)^(?:please\s+)?(?:add|check|review|update|fix|look|take|write|open|file|send|ping|merge"
    r"|deploy|rotate|run|rerun|re-run|bump|upgrade|document|draft|schedule|set|create|prepare"
    r"|share|post|test|investigate|handle|own|pick|follow|reach|ask|book|clean|remove|revert"
    r"|restart|migrate|benchmark|confirm|verify|sync|coordinate|make|do|finish|start|write up"
    r"|move|rename|publish|release|tag|backport|monitor|measure|profile|patch|pair|sign|approve"
    r"|announce|notify|invite|reply|respond|summari[sz]e|collect|gather|compile|label|triage"
    r"|close|reopen|install|configure|enable|disable|double-check|dig|figure|get)\b"
)
_ASSIGNMENT = re.compile(
    r"^@?(?P<name>[\w.\-]{2,40})\s+(?:will|to|is going to|is gonna|can|should)\s+(?P<rest>.+)",
    re.IGNORECASE,
)
_ASSIGNED_TO = re.compile(r"(?i)\b(?:assigned to|assignee:|owner:)\s*@?(?P<name>[\w.\-]{2,40})")
# Openings that ask even without a "?" (IRC users rarely type one). "When ..." and "Which ..."
# open relative clauses as often as questions, so they need the "?".
_INTERROGATIVE = re.compile(
    r"(?i)^(?:how (?:do|does|can|could|to|would|should|is|are|did)|what (?:is|are|does|do|should"
    r"|would|can|could)|why (?:is|are|does|do|would|can|can't|doesn't)|where (?:is|are|can|do|does)"
    r"|is there|are there|does anyone|does anybody|anyone know|anybody know|any idea|any ideas"
    r"|is it possible|has anyone|has anybody|did anyone|can (?:i|we|someone|anyone))\b"
)
# Questions put to one person about their own setup ("are you on 10.04?", "did you try X?"):
# part of someone else's troubleshooting, rarely a question for the channel.
_SECOND_PERSON = re.compile(
    r"(?i)^(?:(?:are|did|have|do|can|could|would|were|will|is) you|you mean|what do you mean"
    r"|(?:why|what|how) (?:do|did|are|would|were) you (?!\w+ (?:a|an|the) )|you\b)"
)
_NON_ANSWER = FoldedPattern(
    r"(?i)\b(?:not sure|no idea|don't know|dont know|dunno|no clue|i'm not|idk|don't understand"
    r"|what do you mean)\b"
)
_PROBLEM = FoldedPattern(
    r"(?i)\b(?:error|errors|fail|fails|failed|failing|failure|broken|crash|crashes|crashed|"
    r"doesn't work|does not work|not working|won't|can't|cannot|unable|issue|problem|bug|"
    r"exception|timeout|timed out|times out|flaky|missing|refused|denied|stuck|hangs|leak)\b"
)
_ADVICE = FoldedPattern(
    r"(?i)^(?:always|never|avoid|prefer|make sure|don't forget|do not forget|remember to"
    r"|be careful)\b|\b(?:you should|you'll want to|i(?:'d)? recommend|we recommend|is recommended"
    r"|best practice|it's better to|rule of thumb)\b"
)
_LEADING_FILLER = re.compile(r"(?i)^(?:(?:ok(?:ay)?|so|alright|right|and|yeah|yes|well)[,!.]?\s+)+")
_EMOTICON_TAIL = re.compile(
    r"(?:\s*(?::\)|:\(|:D|;\)|:P|xD|\^\^|[\U0001F300-\U0001FAFF☀-➿]))+\s*$"
)


_Rule = TypeVar("_Rule", bound=Callable[..., "Claim | None"])


def _per_participants(rule: _Rule) -> _Rule:
    """`rule(sentence, ..., participants)` answered once per sentence and participants: its
    answer is kept in `participants.rules` (a chunk's rules and its item model ask alike)."""

    @functools.wraps(rule)
    def cached(*args: Any) -> Claim | None:
        memo = args[-1].rules
        key = (rule, *args[:-1])
        if key in memo:
            return memo[key]  # type: ignore[no-any-return]
        answer: Claim | None = rule(*args)
        memo[key] = answer
        return answer

    return cached  # type: ignore[return-value]


@dataclass(frozen=True)
class Claim:
    """What a sentence says, ready for a contract item."""

    text: str
    strength: int
    owner: str | None = None


def clean_claim(text: str, limit: int = CLAIM_LIMIT) -> str:
    """A sentence as a claim: URLs kept, whitespace squashed, filler and emoticons trimmed."""
    text = _EMOTICON_TAIL.sub("", squash(text))
    text = _LEADING_FILLER.sub("", text).strip(" -\u2013\u2014*\u2022")
    return truncate_words(capitalize_first(text), limit)


def _substantive(text: str, minimum: int = 2) -> bool:
    return len(set(content_words(text))) >= minimum


def _without(text: str, marker: re.Match[str]) -> str:
    """`text` with the marker taken out ("#agreed", "FYI:"), wherever it stood: what it marks."""
    return text[: marker.start()] + " " + text[marker.end() :]


@_per_participants
def decision(sentence: str, participants: Participants) -> Claim | None:
    """A decision stated outright: a marker or decision phrasing, not a question or a hedge."""
    text = strip_address(squash(sentence), participants)
    marker = DECISION_MARKER.search(text)
    if marker:
        rest = _without(text, marker).strip()
        return Claim(clean_claim(rest), 3) if _substantive(rest) else None
    if text.endswith("?") or _NEGATED_DECISION.search(text) or _HEDGE.search(text):
        return None
    if _DECISION_STRONG.search(text) and _substantive(text, 3):
        return Claim(clean_claim(text), 2)
    return None


FIRST_PERSON = FoldedPattern(r"(?i)\b(?:i|i'll|i'm|i've|i'd|me|my)\b")
_SIGNED_OFF = FoldedPattern(r"(?i)\bsigned off\b(?!\s+on\b)")
_CONDITIONAL = re.compile(r"(?i)^\W*(?:if|when|once|unless|whether)\b")
_POLICY = FoldedPattern(
    r"(?i)\b(?:going forward|from now on|the plan is|(?:the|our|final) decision (?:is|was)"
    r"|consensus (?:is|was)|(?:is|are) approved|signed off)\b"
)
_GROUP = FoldedPattern(
    r"(?i)\b(?:we|we'll|we're|we've|let's|let us|us|our|team|everyone|all of us)\b"
)


def firm_decision(text: str) -> bool:
    """Phrased as something the group settled: a marker ("#agreed"), or decision phrasing with
    the group as its subject ("we decided", "let's go with", "we're switching to") or stated
    as policy ("from now on", "the plan is"); not asked, hedged, negated, conditional ("if
    you've decided to ...") or one person's choice ("then i decided to reformat"). What a
    reader counts as a decision rather than an intention or a proposal nobody answered."""
    flat = squash(text)
    if DECISION_MARKER.search(flat):
        return True
    if flat.endswith("?") or _NEGATED_DECISION.search(flat) or _HEDGE.search(flat):
        return False
    if _CONDITIONAL.search(flat) or not _DECISION_STRONG.search(flat) or not _substantive(flat, 3):
        return False
    if _SIGNED_OFF.search(flat):
        return False  # "everyone's contacts have signed off": they left the chat
    if _GROUP.search(flat):
        return True
    return bool(_POLICY.search(flat)) and not FIRST_PERSON.search(flat)


@_per_participants
def proposal(sentence: str, participants: Participants) -> Claim | None:
    """A proposal ("let's ...", "we should ..."): a decision once someone else agrees."""
    text = strip_address(squash(sentence), participants)
    if text.endswith("?") or _HEDGE.search(text) or not _PROPOSAL.search(text):
        return None
    return Claim(clean_claim(text), 1) if _substantive(text, 3) else None


# Words that carry no task: thanks and courtesy, pronouns standing for something said before,
# and when ("next time", "now"). "I'll do that next time" and "will explore...thanx" promise no
# task a reader could check.
_NO_TASK_WORDS = frozenset(
    """thanks thank thanx thx ty cheers please pls plz sorry lol np welcome
    next time now later today tomorrow tonight soon asap again then sometime afterwards""".split()
)
_PAST_TENSE = re.compile(
    r"(?i)^(?:already\s+|just\s+|also\s+)?(?:(?!(?:need|feed|seed|speed|embed|proceed|exceed"
    r"|succeed|shed|bed)\b)[a-z]{2,}ed|did|done|was|were|had|went|made|got|sent|wrote|found|took"
    r"|gave|built|ran|set up|fixed up)\b"
)


def is_task(text: str) -> bool:
    """Whether `text` (what someone is to do) names a task: not past tense ("fixed the X" is a
    report) and at least two words besides courtesy, pronouns and time words."""
    if _PAST_TENSE.match(squash(text)):
        return False
    return len([w for w in content_words(text) if w not in _NO_TASK_WORDS]) >= 2


def _owner_name(name: str, participants: Participants) -> str:
    return participants.lookup(name.lstrip("@")) or name.lstrip("@")


@_per_participants
def action(sentence: str, author: str, participants: Participants) -> Claim | None:
    """An action item: a marker, a commitment of the author, a request to or assignment of
    someone. The claim text is the task; `owner` who does it (when known)."""
    flat = squash(sentence)
    addressed = participants.addressee(flat)
    text = strip_address(flat, participants)
    marker = ACTION_MARKER.search(text)
    if marker:
        rest = _without(text, marker).strip(" :-")
        owner = marker.groupdict().get("todo_owner")
        assigned = _ASSIGNMENT.match(rest)
        if owner is None and assigned and participants.lookup(assigned.group("name")):
            owner = assigned.group("name")
        if owner is None:
            owner = _assigned_to(rest, participants) or addressed
        # "#action bob migrated X": the task is what follows the name.
        first, _, after = rest.partition(" ")
        task = after if participants.lookup(first.lstrip("@")) else rest
        if not _substantive(rest) or not is_task(task):
            return None
        return Claim(clean_claim(rest), 3, _owner_name(owner, participants) if owner else None)
    if text.endswith("?") and not _REQUEST.match(text):
        return None
    commit = _SELF_COMMIT_START.match(text) or _SELF_COMMIT.search(text)
    if commit and not _HEDGE.search(text[: commit.start("lead")] + commit.group("lead")):
        rest = commit.group("rest")
        if commit.group("lead").casefold() == "let me" and not _WORK_VERB.match(rest):
            rest = ""
        if rest and not _NOT_A_COMMITMENT.match(rest) and is_task(rest) and "?" not in rest:
            return Claim(clean_claim(rest), 2, author)
    request = _REQUEST.match(text)
    if request and (addressed or "please" in text.casefold()):
        rest = request.group("rest").rstrip("?!. ")
        if _WORK_VERB.match(rest) and is_task(rest):
            return Claim(clean_claim(rest), 2, addressed)
    assigned = _ASSIGNMENT.match(text)
    if assigned and participants.lookup(assigned.group("name")) and not text.endswith("?"):
        rest = assigned.group("rest")
        if _WORK_VERB.match(rest) and is_task(rest) and not _HEDGE.search(text):
            owner = participants.lookup(assigned.group("name"))
            return Claim(clean_claim(text), 2, owner)
    owner = _assigned_to(text, participants)
    if owner and _substantive(text, 3) and is_task(text):
        return Claim(clean_claim(text), 2, owner)
    return None


def _assigned_to(text: str, participants: Participants) -> str | None:
    match = _ASSIGNED_TO.search(text)
    return _owner_name(match.group("name"), participants) if match else None


_ASKING_SOMEONE = re.compile(
    r"(?i)^(?:(?:hey|hi|ok|so)[,!]?\s+)?(?:(?:can|could|would|will) (?:someone|anyone|somebody|"
    r"you)(?: please)?|please|who can|who wants to|anyone (?:able|willing) to)\s+"
)


def strip_request(text: str) -> str:
    """ "Can someone review X?" → "review X": the task inside a request."""
    return _ASKING_SOMEONE.sub("", squash(text)).rstrip("?!. ")


_TRY_LATER = re.compile(r"(?i)^\s*(?:again|later|harder|my best|another)\b")


def takes_advice(text: str, participants: Participants) -> bool:
    """ "ok will do", "I'll try that now": the author takes up what was just suggested to them,
    naming at most a few words of it (a commitment that states its own task is `action`'s;
    "I'll try again later" takes up nothing)."""
    flat = strip_address(squash(text), participants)
    first, _, after = flat.partition(" ")
    if after and participants.lookup(first):
        flat = after  # "brenner ok will do": IRC users often address without a colon
    match = _TAKES_ADVICE.search(flat)
    if match is None or _TRY_LATER.match(match.group("rest")):
        return False
    named = [w for w in content_words(match.group("rest")) if w not in _NO_TASK_WORDS]
    return len(named) <= 3


_SUGGESTION = re.compile(
    r"(?i)^(?:(?:so|ok(?:ay)?|then|well|no|yes|yeah|just|maybe|also)[,.!]*\s+)*(?:try|use|run|install"
    r"|remove|purge|uninstall|switch|type|check|edit|put|add|set|open|reboot|restart|look|go|send"
    r"|ask|file|download|read|see)\b|\b(?:you (?:can|could|should|need to|might|may want to)"
    r"|have you tried|did you try|i'd|i would|i suggest|i recommend|try|use)\b"
)


def addressed_to(text: str, participants: Participants) -> str | None:
    """The participant `text` addresses: by `Participants.addressee`, or a bare leading name
    ("brenner ok will do")."""
    found = participants.addressee(text)
    if found is not None:
        return found
    first = squash(text).partition(" ")[0]
    if not first:
        return None
    named = participants.lookup(first)
    if named is None and _LEADING_NAME.match(first):
        return first.lstrip("@").rstrip(":,")  # someone who has not written in this window
    return named


_LEADING_NAME = re.compile(r"^@?[\w.\-\[\]|`^]{2,40}[:,]$")


_SUGGESTING_QUESTION = re.compile(
    r"(?i)\b(?:have you tried|did you try|why don't you|(?:can|could) you(?: please)?)\s+"
)
_SUGGESTION_LEAD = re.compile(
    r"(?i)^(?:(?:so|ok(?:ay)?|then|well|no|yes|yeah|also)[,.!]*\s+)*(?:(?:have you tried"
    r"|did you try)(?=\s)|(?:why don't you|you (?:can|could|should|need to|might want to|may want"
    r" to)|i'd|i would|i suggest|i recommend|just)\s+)"
)


def is_suggestion(sentence: str, participants: Participants) -> bool:
    """Advice to someone: an imperative ("try switching to X", "remove the icedtea"), "you
    could ...", "have you tried ...", "I'd ...". A question suggests only when it asks the
    person to do something ("have you tried X?", "can you X?"); "do you use X?" asks."""
    text = strip_address(squash(sentence), participants)
    if "?" in text and not _SUGGESTING_QUESTION.search(text):
        return False
    return bool(_SUGGESTION.search(text) or _SUGGESTING_QUESTION.search(text))


def suggested_task(sentence: str, participants: Participants) -> str:
    """The task in a suggestion: "have you tried installing X" -> "try installing X", "you
    could run X" -> "run X", "can you connect using X?" -> "connect using X"."""
    text = strip_request(strip_address(squash(sentence), participants))
    lead = _SUGGESTION_LEAD.match(text)
    if lead is None:
        return text
    rest = text[lead.end() :].strip()
    return ("try " + rest) if "tr" in lead.group(0).casefold() else rest


def commitment_only(text: str) -> bool:
    """A reply that takes a task without restating it ("on it", "I'll take it")."""
    return bool(_COMMIT_ONLY.match(squash(text)))


@_per_participants
def question(sentence: str, participants: Participants) -> Claim | None:
    """A question worth a reader's attention: ends in "?" (or opens with an interrogative, as
    IRC users rarely type "?"), has at least three content words, and is not small talk."""
    text = strip_address(squash(without_urls(sentence)), participants)
    text = _EMOTICON_TAIL.sub("", text).strip()
    asks = text.endswith("?") or bool(_INTERROGATIVE.match(text) and len(text.split()) >= 5)
    if not asks or is_social(text):
        return None
    words = set(content_words(text))
    if len(words) < 3:
        return None
    strength = min(len(words), 8) + (3 if _PROBLEM.search(text) else 0)
    strength += 2 if re.search(r"[\w-]+\.[a-z]{2,}|/|\d|_|--", text) else 0
    strength -= 6 if is_second_person(text) else 0
    return Claim(clean_claim(strip_address(squash(sentence), participants)), strength)


def is_second_person(question: str) -> bool:
    """A question about the other person's own setup or meaning (see `_SECOND_PERSON`)."""
    return bool(_SECOND_PERSON.match(squash(question)))


def is_non_answer(text: str) -> bool:
    """ "No idea", "not sure what you mean": a reply that answers nothing."""
    return bool(_NON_ANSWER.search(text))


def is_problem(text: str) -> bool:
    return bool(_PROBLEM.search(text))


def is_howto(text: str) -> bool:
    return bool(
        re.match(r"(?i)^\W*(?:how|is there a way|what's the best way|what is the best)", text)
    )


def tip(sentence: str, participants: Participants) -> Claim | None:
    """Reusable advice: a "Tip:" style marker, or advice phrasing not aimed at one person."""
    flat = squash(sentence)
    text = strip_address(flat, participants)
    if text.endswith("?") or is_social(text):
        return None
    marker = TIP_MARKER.match(text)
    if marker:
        rest = text[marker.end() :]
        return Claim(clean_claim(rest), 3) if _substantive(rest, 3) else None
    if participants.addressee(flat) is None and _ADVICE.search(text) and _substantive(text, 5):
        return Claim(clean_claim(text), 1)
    return None


def info(sentence: str) -> Claim | None:
    """A fact flagged for the record (`#info`, "FYI:")."""
    text = squash(sentence)
    marker = INFO_MARKER.search(text)
    if not marker:
        return None
    rest = _without(text, marker).strip()
    return Claim(clean_claim(rest), 2) if _substantive(rest, 3) else None


# The asker, after an answer, saying it did not resolve the problem: the question is still open
# (docs/gold-set/GUIDELINE.md: "or the asker said the answers did not work").
_STILL_STUCK = re.compile(
    r"(?i)\b(?:still (?:not|no|doesn't|does not|don't|can't|cannot|won't|getting|get|the same"
    r"|same|broken|failing|fails|having|has|have|nothing|slow|horrible|crashing|freezing|stuck)"
    r"|(?:didn't|did not|doesn't|does not|don't|won't) (?:help|work|change|fix)"
    r"|no (?:luck|change|difference|joy|success)|same (?:error|problem|issue|thing|result|message)"
    r"|nothing (?:changed|happens|happened)|still (?:the )?same|not working|any (?:other )?(?:ideas"
    r"|idea|suggestions?)\b|anyone\?|anybody\?|no one\?|nobody\?)"
)
_SETTLED = re.compile(
    r"(?i)\b(?:thanks|thank you|thx|ty|solved|fixed|works now|that worked|it worked|got it"
    r"|never ?mind|nvm|figured it out|sorted|working now)\b"
)
UNRESOLVED_HORIZON = 25  # later messages read for the asker's word on the answers


def asker_unresolved(messages: Sequence[WindowMessage], index: int) -> bool:
    """Whether the asker of `messages[index]` says later, before thanking anyone, that the
    answers did not help ("still not working", "no luck", "any other ideas?") or asks the same
    question again: an answered-looking question that is still open. Reads the question's own
    conversation when the window is threaded, else the next few messages."""
    question = messages[index]
    asked = set(content_words(question.normalized_text))
    for later in messages[index + 1 : index + 1 + UNRESOLVED_HORIZON]:
        if question.conversation is not None and later.conversation != question.conversation:
            break
        if later.author != question.author:
            continue
        text = squash(later.normalized_text)
        if _STILL_STUCK.search(text):
            return True
        if _SETTLED.search(text):
            return False
        again = set(content_words(text))
        if "?" in text and asked and len(asked & again) >= max(3, len(asked) // 2):
            return True
    return False
