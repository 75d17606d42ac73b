"""Token-level F1 between an extracted text and a gold text: how much of the gold main content
an extraction kept (recall) and how little boilerplate it added (precision).

Tokens are `\\w+` runs of the NFKC case-folded text (`runner.grounding.words.words`, the rule of
claim support); the comparison is on multisets (a word that appears three times in the gold text
must appear three times to be fully recalled).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import lxml.html

from runner.grounding.words import WORD, words


@dataclass(frozen=True)
class TokenF1:
    precision: float
    recall: float
    f1: float


def _tokens(text: str) -> Counter[str]:
    return Counter(words(text, WORD))


def token_f1(candidate: str, reference: str) -> TokenF1:
    """Multiset token precision, recall and F1 of `candidate` against `reference`."""
    got, gold = _tokens(candidate), _tokens(reference)
    overlap = sum((got & gold).values())
    precision = overlap / sum(got.values()) if got else 0.0
    recall = overlap / sum(gold.values()) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return TokenF1(precision=precision, recall=recall, f1=f1)


def html_reference_text(html: str | bytes) -> str:
    """All text of a gold HTML fragment (such as readability's `expected.html`)."""
    if isinstance(html, bytes):
        # Gold fragments carry no <meta charset>; given bytes, libxml2 would guess Latin-1 and
        # turn every non-ASCII character into mojibake that then never matches the extraction.
        html = html.decode("utf-8", errors="replace")
    return str(lxml.html.fromstring(html).text_content())
