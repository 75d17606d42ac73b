"""What a chat message's words say to the memory rules: that something is done, cancelled or
withdrawn, that a decision is reversed or replaced, that a message asks back, only thanks, or
goes on from its writer's previous line.

Patterns over words only, so they hold for any chat; a marker counts only when no negation
("not yet merged") comes just before it.
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
WITHDRAWN = re.compile(
    r"\b(?:never ?mind|nvm|figured it out|solved it|sorted it|got it working|works now|"
    r"fixed it)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:not|n't|never|no|yet)\s+(?:\w+\s+){0,2}$|\b(?:not yet|isn't|aren't|wasn't)\b",
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


def marker(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of `pattern` in `text` that no negation ("not yet merged") precedes."""
    for match in pattern.finditer(text):
        if not _NEGATED.search(text[max(0, match.start() - 30) : match.start()]):
            return match
    return None


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
