"""Query and text terms for evidence scoring and query-focused summaries.

Tokenization: the text is NFKC-normalized (so the PDF
ligature "ﬁ" reads as "fi") and case-folded, split on everything that is not a letter or digit
(whitespace, punctuation, underscores: `runner.grounding.words.TERM`), English stopwords (NLTK's
list) are removed, and so are one-character ASCII tokens. Matching is on WHOLE tokens: "ai"
never matches inside "maintain".

One light, deterministic plural fold is applied to both sides so "budgets" finds "budget":
`-ies` → `-y` (len > 4) and a final `s` is dropped (len > 3, not after `s`, `u` or `i`). It never
joins or splits tokens, so whole-token matching is kept.
"""

from __future__ import annotations

from runner.grounding.words import TERM, words

# NLTK's English stopword list; contractions appear in their split form ("don", "t").
STOPWORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against
    between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t can will just don
    should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn
    mustn needn shan shouldn wasn weren won wouldn""".split()
)


def fold(token: str) -> str:
    """The light plural fold described in the module docstring."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and token[-2] not in "sui":
        return token[:-1]
    return token


def tokens(text: str) -> list[str]:
    """All content terms of `text`, in order, with repeats."""
    return [
        fold(token)
        for token in words(text, TERM)
        if token not in STOPWORDS and not (len(token) == 1 and token.isascii())
    ]


def query_terms(query: str) -> list[str]:
    """The distinct content terms of a query, in first-seen order."""
    return list(dict.fromkeys(tokens(query)))


def term_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))
