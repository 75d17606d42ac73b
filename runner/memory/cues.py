"""What a chat message's words say to the memory rules: that something is done, cancelled or
withdrawn, that a decision is reversed or replaced, that a message asks back, only thanks, or
goes on from its writer's previous line.

Patterns over words only, so they hold for any chat; a marker counts only when no negation
("not yet merged", "haven't figured it out") comes just before it.

A state change is read from the clause that holds its word, the way people write them:
- done (`completion`): a clause that reports the thing finished: the word alone or at the end
  of a short clause ("done", "EriC: done", "staging certs are updated, done", "Staging upgrade
  done:"), or after "I"/"we" ("I've pushed the fix", "just merged it"). Not when the clause is
  asked ("done, and then?" reports the step, "has it been done?" asks), hypothetical or
  subordinate ("when I'm done", "if that's done", "should have done it"), about experience
  ("done this a year ago", "has always done that", "I have done several installs", "i had
  done that manually"), not finished ("almost done"), a belief ("I thought it was fixed"), about
  someone else ("you haven't done", "they fixed nautilus", "nicely done"), an anecdote ("I had
  a similar issue, ... solved when I ..."), about the speaker ("I'm done for today", "so i'm
  done": giving up), put up for confirmation ("..., right?"), a merge
  of two things ("merged into"), a program's progress line ("Reading package lists...
  Done"), or followed by what is still to do ("about to do 3").
- the asker's question closed (`closes_question`): "nvm", "never mind", "found it", "figured
  it out", "solved it", "that fixed it", "it's fixed", "fixed the samba problem", "got my
  resolution sorted", "works now", "solved" or "[solved]" alone, under the same conditions,
  except that what follows may say how ("fixed that using umount -l") and the one who fixed it
  may be "you" ("you fixed it, bro"); not "found that <a finding>".
- a decision ended (`retracts`, `reverts`, `switches`): a retraction opening the message
  ("scratch that", "wait, forget that", "never mind"), a report that it was reverted or rolled
  back (not a story's step, "... and then reverted"), or a committed switch ("we're switching
  to X instead of Y", "let's go with X", "we reverted back to X").
"""

from __future__ import annotations

import re

from runner.grounding.addressing import LEADING_ADDRESS

# Whole words only: "mount-fixed" or "fixed.conf" names a thing, it says nothing is done.
DONE = re.compile(
    r"(?<![\w.-])(?:done|merged|shipped|fixed|landed|deployed|released|pushed|finished|"
    r"completed|implemented|resolved)(?![\w-]|\.\w)"
    r"|https?://\S+/(?:pull|merge_requests|commit|commits)/\w+",
    re.IGNORECASE,
)
CANCELLED = re.compile(
    r"\b(?:cancel(?:l?ed)?|won'?t (?:do|fix)|wontfix|not needed|no longer needed|"
    r"no need anymore|scrap that|forget it|never ?mind|nvm)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"(?:\bnot|n'?t|\bnever|\bno|\byet)\s+(?:\w+\s+){0,2}$|\b(?:not yet|isn't|aren't|wasn't)\b",
    re.IGNORECASE,
)
REVERSAL = re.compile(
    r"\b(?:revert(?:ed|ing)?|roll(?:ed)? back|undo|undid|back(?:ed)? out|no longer|"
    r"not going to|won'?t|do not|don'?t|never|cancel(?:l?ed)?|drop(?:ped)?)\b",
    re.IGNORECASE,
)
REPLACEMENT = re.compile(
    r"\b(?:instead|switch(?:ed|ing)? to|rather than|replac(?:e|ed|es|ing)|change(?:d)? to|"
    r"move(?:d)? to|go(?:ing)? with)\b",
    re.IGNORECASE,
)
# A message going on from its writer's own previous line ("and try ...", "well then"): it
# continues what they said before, it does not answer what was asked since.
CONTINUATION = re.compile(r"^\W*(?:and|also|well|but|or|plus)\b", re.IGNORECASE)
# A message that only thanks or laughs, whatever follows: no answer.
THANKS = re.compile(
    r"^\W*(?:thanks|thank you|thx|ty|cheers|lol|haha|hehe|np|no problem|you'?re welcome|yw)\b",
    re.IGNORECASE,
)
NEGATION = re.compile(r"\b(?:not|no|never|n't|don'?t|won'?t)\b", re.IGNORECASE)


# Clause boundaries: sentence and clause punctuation followed by a space or the end, a line
# break, an ellipsis, or a conjunction that starts a new clause.
_CLAUSE_END = re.compile(
    r"[.!?;:,\u2026]+(?=\s|$)|\n|\.{3,}|\s[-\u2013\u2014]+\s|\s(?:but|then|so|because|and then)\s",
    re.IGNORECASE,
)
# Words that make a clause hypothetical, subordinate or an instruction rather than a report.
_IRREALIS = re.compile(
    r"\b(?:if|when|whenever|once|until|till|unless|after|before|while|since|by|hope|hopefully|"
    r"maybe|perhaps|might|may|could|would|should|can|will|shall|gonna|going to|want|wants|"
    r"need|needs|try|trying|how|what|why|where|whether|thought|assumed|supposed)\b",
    re.IGNORECASE,
)
# Someone other than the speaker (or the task itself) as the subject.
_OTHER_SUBJECT = re.compile(
    r"\b(?:you|u|ya|he|she|they|someone|somebody|anyone|anybody|who|people|guys)\b", re.IGNORECASE
)
# Experience, habit or a time long past: not this task, now.
_EXPERIENCE = re.compile(
    r"\b(?:ago|before|in the past|always|ever|used to|last (?:year|month|week|time)|"
    r"years?|months?|times)\b",
    re.IGNORECASE,
)
_PRAISE = re.compile(r"\b(?:nicely|well|greatly|beautifully|good|great|nice)\W*$", re.IGNORECASE)
# An anecdote of the speaker's own past, told to someone else ("I had a similar issue, ...
# problem solved when I uninstalled zeroconf"): about that past, not this item.
_ANECDOTE = re.compile(
    r"\b(?:similar|the same) (?:issue|problem|thing|bug|error)\b|\bhappened to me\b",
    re.IGNORECASE,
)
# What follows a "done" that is not a report of a task: "done for today", "done with exams",
# "merged into", "finished watching the dvd" (an activity), "done several installs".
_NOT_A_REPORT_AFTER = re.compile(
    r"^\W*(?:for|with|into|\w+ing|several|some|many|much|lots|a lot|"
    r"a few|any|anything|something|everything|nothing)\b",
    re.IGNORECASE,
)
# Just before the word: the past perfect of a story ("i had done that manually"), a task not
# yet finished ("almost done"), or the speaker's own state ("so i'm done": giving up, leaving).
_NOT_NOW_BEFORE = re.compile(
    r"(?:\bhad\s+(?:\w+\s+)?|\b(?:almost|nearly|not quite|half|halfway|partly|partially|"
    r"mostly)\s+|\b(?:i'?m|i am|am)\s+(?:all\s+)?)$",
    re.IGNORECASE,
)
# A message ending in a tag question ("..., right?") asks for its statement to be confirmed.
_TAG_QUESTION = re.compile(
    r"(?:,|\s)\s*(?:right|correct|no|yes|ok|okay|isn'?t it|is it|eh)\s*\?+\W*$", re.IGNORECASE
)
# A program's progress line: the ellipsis right after its step ("lists... Done"); one standing
# apart is a pause in what a person writes ("tnx ... it's fixed :)").
_PROGRESS_BEFORE = re.compile(r"\S(?:\.{3,}|\u2026)\s*$")
# How a closed question was closed ("fixed that using umount -l", "solved my issue with help
# from ..."): what follows a closure word is its means, not an activity.
_MEANS_AFTER = re.compile(r"^\W*(?:using|with|by|via|through|thanks)\b", re.IGNORECASE)
# What is still to do after it: the task is not finished.
_UNFINISHED = re.compile(
    r"\b(?:about to|still (?:have|need|got) to|not (?:yet|finished)|left to do|remaining)\b",
    re.IGNORECASE,
)
# Words that carry no content in a completion clause ("ok so I've just ... done").
_FILLER = frozenset(
    "ok okay k alright right yes yep yeah sure so and also now all just already finally "
    "i i've ive we we've weve have has had it's its is are was were been be it that this "
    "them too as well the a an my our thank thanks you ty cheers".split()
)
MAX_CLAUSE_WORDS = 5


def _clause(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The clause around text[start:end]: its start, its end, and the punctuation ending it."""
    left = 0
    for found in _CLAUSE_END.finditer(text, 0, start):
        left = found.end()
    following = _CLAUSE_END.search(text, end)
    right = following.start() if following else len(text)
    closing = following.group(0) if following else ""
    return left, right, closing


def _content(words: str) -> list[str]:
    return [w for w in re.findall(r"[\w'-]+", words.casefold()) if w not in _FILLER]


def _reads_as_report(
    text: str, match: re.Match[str], *, strict_size: bool, closing_question: bool = False
) -> bool:
    """Whether the clause holding `match` reports it as a fact of now (see the module's
    docstring): not asked, hypothetical, experience, someone else's, or unfinished. With
    `closing_question` (the asker's own question closed), what follows may say how ("fixed
    that using umount -l") and "you" may be who fixed it ("you fixed it, bro")."""
    if _negated_before(text, match.start()) or _TAG_QUESTION.search(text):
        return False
    if _PROGRESS_BEFORE.search(text[: match.start()]):
        return False  # "Reading package lists... Done": a program's progress line
    lead = LEADING_ADDRESS.match(text)
    begin = lead.end() if lead and lead.end() <= match.start() else 0
    left, right, closing = _clause(text, match.start(), match.end())
    left = max(left, begin)
    before, after = text[left : match.start()], text[match.end() : right]
    if "?" in closing or (right == len(text) and text.rstrip().endswith("?") and not closing):
        return False
    if _IRREALIS.search(before) or _NOT_NOW_BEFORE.search(before):
        return False
    others = {w.casefold() for w in _OTHER_SUBJECT.findall(before)}
    if others and not (closing_question and others <= {"you", "u"} and _FIXED.match(match[0])):
        return False
    if strict_size and _PRAISE.search(before):
        return False  # "nicely done", "well done": praise of someone else's work
    means = closing_question and _MEANS_AFTER.match(after)
    if _EXPERIENCE.search(before + after) or (not means and _NOT_A_REPORT_AFTER.search(after)):
        return False
    if _ANECDOTE.search(text):
        return False
    if before.rstrip().endswith(("(", " a", " an", " the")) or _UNFINISHED.search(
        text[match.end() :]
    ):
        return False
    if strict_size:
        return len(_content(before)) <= MAX_CLAUSE_WORDS and len(_content(after)) <= 3
    return True


def completion(text: str, *, short: bool = True) -> re.Match[str] | None:
    """The first "done" word (or PR/commit link) of `text` in a clause that reports a task done:
    a short clause (`MAX_CLAUSE_WORDS` content words before the word, 3 after) unless `short`
    is false, for a message that names the task ("the deploy docs for the backup flow are
    updated and merged")."""
    for found in DONE.finditer(text):
        if "://" in found.group(0) or _reads_as_report(text, found, strict_size=short):
            return found
    return None


_SOLVED = re.compile(
    r"(?<![\w./$-])(?:never ?mind|nvm)(?![\w/-])(?!\.\w)"
    r"|\b(?:figured (?:it|that|this|them)? ?out|found (?:it|that|them)\b"
    r"|(?:solved|sorted|fixed|resolved) (?:it|that|this|them|everything)\b"
    r"|(?:solved|sorted|fixed|resolved) (?:the|my|this|that|our) (?:[\w-]+ ){0,2}(?:problem|issue)s?\b"
    r"|(?:problem|issue) (?:solved|fixed|resolved)\b"
    r"|(?:it|that|this|everything)(?:'s| is|s) (?:now |all )?(?:fixed|solved|sorted|resolved)\b"
    r"|got (?:it|that|this|them|my [\w-]+|the [\w-]+) (?:working|to work|going|sorted|fixed|solved)"
    r"|works now|working now|it works\b|works fine now)",
    re.IGNORECASE,
)
# A closure someone else may have made for the asker ("you fixed it"); finding or figuring out
# is the asker's own ("glad you figured it out" is about the other person's problem).
_FIXED = re.compile(r"(?:solved|sorted|fixed|resolved)\b", re.IGNORECASE)
# The word alone opening the message: "solved ($(patsubst ...))", "[solved]", "fixed!".
_SOLVED_ALONE = re.compile(r"\W*(?:solved|fixed|resolved|sorted)\b(?!\s*[\w?])", re.IGNORECASE)
# "found that" opening a clause of its own ("i have found that the webcam works with ..."):
# a finding told, not the thing looked for found.
_FOUND_THAT_CLAUSE = re.compile(r"^found (?:that|this)$", re.IGNORECASE)


def closes_question(text: str) -> re.Match[str] | None:
    """What in the asker's message says their question is solved or withdrawn ("nvm", "found
    it", "that fixed it", "works now", "solved" alone), in a clause that reports it (not
    "hopefully I get this solved", "still haven't figured it out", "who has solved it")."""
    spoken = without_address(text)
    alone = _SOLVED_ALONE.match(spoken)
    if alone is not None and not is_question(text):
        return _SOLVED_ALONE.match(text, len(text) - len(spoken))  # the same words, in `text`
    for found in _SOLVED.finditer(text):
        if _FOUND_THAT_CLAUSE.match(found[0]):
            _, right, _ = _clause(text, found.start(), found.end())
            if len(_content(text[found.end() : right])) >= 2:
                continue
        if _reads_as_report(text, found, strict_size=False, closing_question=True):
            return found
    return None


# A retraction opening the message (after an addressee and a word of hesitation).
_HESITATION = r"(?:(?:wait|sorry|oh|ok|okay|ah|actually|hmm|err|no|oops)\W+){0,3}"
_RETRACTION = re.compile(
    # "never mind" opens the message; "scratch that" may follow an addressee without a colon
    # ("monzie scratch that").
    rf"^\W*{_HESITATION}(?:never ?mind|nvm)(?![\w/-])(?!\.\w)"
    rf"|^\W*(?:[^\s:,]{{2,40}}\s+)?{_HESITATION}"
    r"(?:scratch|strike|forget|ignore|disregard) (?:that|this|it|what i said)\b",
    re.IGNORECASE,
)
_REVERTED = re.compile(
    r"\b(?:revert(?:ed)?|roll(?:ed)? (?:it |that |this )?back|backed (?:it |that )?out|undid|"
    r"undone)\b",
    re.IGNORECASE,
)
_REVERTED_TO = re.compile(r"\s+(?:it\s+|that\s+|this\s+)?(?:back\s+)?to\b", re.IGNORECASE)
# Where the object of a revert ends: "reverted back and than it works" names nothing.
_OBJECT_END = re.compile(r"\b(?:and|but|than|then|so|because|since|to|now)\b", re.IGNORECASE)
_THEN_BEFORE = re.compile(r"\bthen\s+$", re.IGNORECASE)
_SWITCH = re.compile(
    r"\b(?:switch(?:ing|ed)? (?:over |back )?to|revert(?:ed|ing)? (?:back )?to|mov(?:e|ing|ed) (?:over |back )?to|"
    r"go(?:ing)? with|instead of|rather than|replac(?:e|ing|ed))\b",
    re.IGNORECASE,
)
# A speaker committing to it: "we're", "we'll", "I'm", "let's", "we decided to".
_COMMITTED = re.compile(
    r"\b(?:we|i|let'?s|let us)(?:'re|'ll|'m|'ve| are| will| am| have| shall| decided to|"
    r" agreed to)?\b",
    re.IGNORECASE,
)


def retracts(text: str) -> re.Match[str] | None:
    """A retraction opening the message: "scratch that", "wait, forget that", "never mind"."""
    found = _RETRACTION.match(without_address(text))
    return found if found and not is_question(text) else None


def reverts(text: str) -> tuple[re.Match[str], str] | None:
    """A report that something was reverted or rolled back, and the words naming what ("the
    abi breakage was reverted": "the abi breakage"; "so I reverted back": nothing but the
    speaker). Not a step of a story ("... and then reverted"), nor going back to something
    ("reverted back to Xubuntu", "had to revert to the 304 ones"): that is a switch, and it
    ends a decision only as one (`switches`)."""
    for found in _REVERTED.finditer(text):
        if _REVERTED_TO.match(text, found.end()) or _THEN_BEFORE.search(text[: found.start()]):
            continue
        if not _reads_as_report(text, found, strict_size=False):
            continue
        # What it names stands before ("the abi breakage was reverted") or after ("i undid the
        # obvious things") the word.
        left, right, _ = _clause(text, found.start(), found.end())
        after = _OBJECT_END.split(text[found.end() : right], maxsplit=1)[0]
        words = _content(text[left : found.start()]) + _content(after)
        named = " ".join(w for w in words if w not in {"so", "then", "back"})
        return found, named
    return None


def switches(text: str) -> re.Match[str] | None:
    """A committed switch: "we're switching to X instead of Y", "let's go with X"; not advice ("you can try switching"), a question or background ("since
    switching to")."""
    if is_question(text):
        return None
    for found in _SWITCH.finditer(text):
        left, _, _ = _clause(text, found.start(), found.end())
        before = text[left : found.start()]
        if not _COMMITTED.search(before):
            continue
        if _negated_before(text, found.start()):
            continue
        hedged = re.search(
            r"\b(?:if|perhaps|maybe|might|could|would|should|try|since|by|when|you|u)\b",
            before,
            re.IGNORECASE,
        )
        if hedged is None:
            return found
    return None


def marker(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of `pattern` in `text` that no negation ("not yet merged") precedes."""
    for match in pattern.finditer(text):
        if not _negated_before(text, match.start()):
            return match
    return None


def _negated_before(text: str, start: int) -> bool:
    """Whether a negation ("not yet", "haven't", "never") stands in the 30 characters before
    `start`: what follows is denied, not reported."""
    return bool(_NEGATED.search(text[max(0, start - 30) : start]))


# Openings that ask back even without a "?" (chat users often leave it out): "are u getting
# files from windows", "did you try the live cd", "what version do you run".
_ASKS_BACK = re.compile(
    r"^\W*(?:(?:are|did|have|do|does|can|could|would|were|will|is|was|should)\s+"
    r"(?:u|you|ya|it|that|this|there|your|the)\b"
    r"|(?:what|which|how|why|where|who)\s+(?:is|are|do|does|did|can|could|would|should|was|"
    r"were|kind|version|exactly)\b)",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    return text.rstrip().endswith("?") or bool(_ASKS_BACK.match(without_address(text)))


def without_address(text: str) -> str:
    """The message without its leading addressee ("bob: ...")."""
    match = LEADING_ADDRESS.match(text)
    return text[match.end() :] if match else text
