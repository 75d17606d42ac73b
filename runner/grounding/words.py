"""Word tokens: the one place that says what a word is, for claim support (`runner.grounding.claim_support`),
evidence terms (`runner.documents.terms`), offline topics (`runner.extract.offline.topics`),
the evaluator's text F1 (`runner.documents.text_f1`) and its owner match
(`runner.evaluation.scoring`).

Every caller reads NFKC-normalized text (the PDF ligature "ﬁ" reads as "fi", full-width forms as
ASCII) and, except where case carries meaning, case-folds it. What a word is differs on purpose,
so it is a parameter, one pattern per rule:

- `WORD` (`\\w+`): Unicode word runs, underscores inside (`max_tokens` is one word). Claim support
  and text F1: a claim that cites `retry_limit` must find that identifier, and F1 counts what a
  reader sees as one word.
- `TERM` (`[^\\W_]+`): letters and digits only, underscores split. Evidence terms (the document
  evidence score): a query "retry limit" must score a chunk that says `retry_limit`.
- `TECH_WORD`: a letter or digit, then word characters and `. + # -`, not ending on `.` or `-`.
  Topics: "node.js", "c++" and "c#" are one topic word, a sentence's final dot is not.
- `NAME_PART` (`\\S+`): whitespace-separated runs, punctuation kept. Person names (the
  evaluator's action-item owners): "O'Brien" and "J." stay whole.

What is dropped afterwards (stopwords, one-letter tokens, plural folds) is each caller's rule and
stays with it.
"""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"\w+")
TERM = re.compile(r"[^\W_]+")
TECH_WORD = re.compile(r"[^\W_](?:[\w.+#-]*[\w+#])?")
NAME_PART = re.compile(r"\S+")


def normalized(text: str) -> str:
    """`text` in NFKC form, case kept (for surfaces and offsets)."""
    return unicodedata.normalize("NFKC", text)


def folded(text: str) -> str:
    """`text` in NFKC form, case-folded: what word tokens are compared on."""
    return normalized(text).casefold()


def words(text: str, pattern: re.Pattern[str] = WORD) -> list[str]:
    """The case-folded word tokens of `text` under `pattern`, in order, with repeats."""
    return pattern.findall(folded(text))


def word_matches(text: str, pattern: re.Pattern[str] = WORD) -> list[re.Match[str]]:
    """The word tokens of `text` under `pattern` as matches in its NFKC form, case kept (for
    callers that need the surface and the offsets, such as topic titles)."""
    return list(pattern.finditer(normalized(text)))
