"""Whether a sentence can open a report's answer on its own: one that leans on what came
before it, greets, states a problem, or points at a table or figure is poor answer material
however many of the question's words it names.

A sentence quoted at the top of an answer is read without its neighbours, so:
- leaning on context: it opens with a word that points back ("However, ...", "So ...",
  "That is why ...", "It ...", "yes ...") after any address to a person (`nick: `);
- a greeting, thanks, a problem statement or the writer's own situation: chat questions are
  often told as "hi, I have X and it fails" or "I have to copy X...", which name the question's
  words without answering them;
- document furniture: "Table 1 presents ...", "Figure 2 shows ...", "Section 4 ...".
The weight is a factor on the sentence's score for the answer only; the report's per-source
sections quote by relevance alone. Rules on sentence shapes, never on any one data set.
"""

from __future__ import annotations

import re

from runner.extract.offline.patterns import is_problem

# A weight under 1 ranks a sentence after the ones that stand alone, without ruling it out:
# when nothing else names the question's words, it is still the best there is.
POOR_OPENING_WEIGHT = 0.5

# "nick: text", as IRC and Gitter address a person; a comma would take "However, " for a nick.
_ADDRESS = re.compile(r"^\s*[\w.\-\[\]`|^{}]{1,32}:\s+(?=\S)")
_LEANS_BACK = re.compile(
    r"(?i)^\W*(?:however|but|so|also|and|or|then|thus|hence|therefore|moreover|furthermore"
    r"|instead|otherwise|still|yet|this|that|these|those|it|its|it's|they|them|he|she|yes|no"
    r"|yeah|yep|nope|nah|ok|okay|well|same|true|right|exactly|indeed|both|such)\b"
)
_GREETING = re.compile(
    r"(?i)^\W*(?:hi|hello|hey|hiya|howdy|greetings|good\s+(?:morning|evening)|thanks|thank\s+you"
    r"|thx|ty|cheers)\b"
)
# A chat sentence telling the writer's own situation or wish: how a question is asked in a chat
# ("I have to copy several directories...", "I'm trying to mount..."), not how it is answered.
_OWN_SITUATION = re.compile(
    r"(?i)^\W*(?:i|we)(?:'m|'ve| am| have| are)?\s+(?:have\s+to|need\s+to|want\s+to|would\s+like"
    r"|trying|tried|try\s+to|am\s+trying|curious|wonder(?:ing)?|can't|cannot|got\s+stuck)\b"
)
_FURNITURE = re.compile(
    r"(?i)^\W*(?:(?:table|figure|fig\.|section|appendix|chapter)\s+\d"
    # a numbered heading glued to the sentence after it: "4.1 Dataset Comparison Table 1 ..."
    r"|\d+(?:\\?\.\d+)*\s+[A-Z])"
)


def answer_opening_weight(text: str, *, chat: bool) -> float:
    """1.0 for a sentence that stands alone as an answer, `POOR_OPENING_WEIGHT` otherwise.
    A problem statement is poor only in a chat (`chat`): a document names a problem to explain
    it."""
    body = _ADDRESS.sub("", text, count=1) if chat else text
    poor = (
        bool(_LEANS_BACK.match(body))
        or bool(_GREETING.match(body))
        or bool(_FURNITURE.match(body))
        or (chat and (is_problem(body) or bool(_OWN_SITUATION.match(body))))
    )
    return POOR_OPENING_WEIGHT if poor else 1.0
