"""Does a synthesized claim say what its cited messages say? Word overlap and script checks.

Overlap rule (documented in docs/architecture.md): text is NFKC-normalized and case-folded, split
into Unicode word tokens (`runner.grounding.words.WORD`, `\\w+`, so Cyrillic, CJK and accented words
count), tokens of one character and English stopwords are dropped, and n = 1 (unigrams): the
share is the fraction of the claim's distinct tokens that occur in the cited messages. Unigrams
rather than longer n-grams because a correct paraphrase rarely keeps word order, while an
invented claim rarely keeps the words.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from runner.grounding.words import WORD, words

# The share of a claim's words its sources must hold unless DIGESTD_MIN_CLAIM_OVERLAP says
# otherwise; rule-made output (the offline extractor) proposes only what passes it.
DEFAULT_MIN_OVERLAP = 0.5

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves also get got one use used using via
    s t ll re ve d m""".split()
)


def content_tokens(text: str) -> list[str]:
    """The claim-comparison tokens of `text`, in order."""
    return list(_content_tokens(text))


# Cached: the offline map asks for the words of one sentence or message from several rules
# (substance, noise, questions, the item model's features, validation of what it cited), and
# folding and splitting it is the costly part. A tuple, so no caller can change a cached answer.
@functools.lru_cache(maxsize=8192)
def _content_tokens(text: str) -> tuple[str, ...]:
    return tuple(
        [token for token in words(text, WORD) if len(token) > 1 and token not in STOPWORDS]
    )


_ASCII_LETTER = re.compile(r"[A-Za-z]")
_LINK = re.compile(r"\w+://\S+|www\.\S+")


def prose_tokens(text: str) -> list[str]:
    """`content_tokens` outside links: a URL's words ("example.org/irc-disentanglement") say
    nothing by themselves, so they neither name a subject nor make a statement."""
    return content_tokens(_LINK.sub(" ", text))


def token_set(sources: Iterable[str]) -> set[str]:
    """Every content token of `sources`: compute once, check many claims (`share_in`)."""
    tokens: set[str] = set()
    for source in sources:
        tokens.update(_content_tokens(source))
    return tokens


def share_in(claim: str, source_tokens: set[str]) -> float | None:
    """Fraction of the claim's distinct content tokens in `source_tokens`; None when the claim
    has no content token to check."""
    claim_tokens = set(_content_tokens(claim))
    if not claim_tokens:
        return None
    return len(claim_tokens & source_tokens) / len(claim_tokens)


def support_share(claim: str, sources: list[str]) -> float | None:
    """Fraction of the claim's distinct content tokens found in `sources`; None when the claim
    has no content token to check."""
    return share_in(claim, token_set(sources))


# Per character: validation asks this of every letter of every claim and its sources, from a
# small alphabet (bounded all the same: a CJK channel has thousands of characters).
@functools.lru_cache(maxsize=8192)
def _script_of(char: str) -> str | None:
    if not char.isalpha():
        return None
    try:
        name = unicodedata.name(char)
    except ValueError:
        return None
    first = name.split(" ", 1)[0]
    if first in {"CJK", "HIRAGANA", "KATAKANA"}:
        return "CJK"
    return first


def dominant_script(text: str) -> str | None:
    """The writing system of most letters in `text` (LATIN, CYRILLIC, CJK, ...), or None."""
    if text.isascii():
        # Every ASCII letter is LATIN (`_script_of`): count them at C speed.
        letters = len(_ASCII_LETTER.findall(text))
        return "LATIN" if letters >= 3 else None
    counts = Counter(script for script in map(_script_of, text) if script)
    if not counts:
        return None
    script, count = counts.most_common(1)[0]
    # Too few letters to say anything about a language.
    return script if count >= 3 else None
