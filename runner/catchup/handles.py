"""A person's handles and how a message names them: folding a handle to its key, and finding the
words of a message that name the person (`@alice`, `alice:`, `alice,`, `alice` as a word).

Folding (the key stored in `person_handles.handle_key`): NFKC, case-folded, trimmed; a leading
`@` dropped; a Discord discriminator (`alice#0420`) dropped; IRC decorations dropped: everything
from a `|` (`alice|away`, `alice|lunch`) and trailing `_`, `^` and backquotes (`alice_`, `alice^`,
the nick a client takes when `alice` is in use). Digits are kept: `alice2` may be someone else.

A mention is a whole word: the handle not glued to a letter, digit, `_`, `-`, `.`, `/` or `@` on
its left (so no e-mail address or URL path), nor to a letter, digit, `_`, `-` or `@` on its right; an
IRC decoration after it (`alice_:`) still names alice. Matching is case-insensitive on the
message's own characters, so a match's span slices the stored text exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

# A key shorter than this would match inside ordinary text far more often than it names anyone.
MIN_HANDLE_CHARS = 2
MAX_HANDLE_CHARS = 120

_DISCRIMINATOR = re.compile(r"#\d{4}$")
_IRC_TRAILER = "_^`"


def handle_key(text: str) -> str:
    """The folded form of a handle or author name (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).strip().casefold()
    folded = folded.lstrip("@")
    folded = _DISCRIMINATOR.sub("", folded)
    folded = folded.split("|", 1)[0]
    return folded.rstrip(_IRC_TRAILER).strip()


def _handle_pattern(keys: Iterable[str]) -> re.Pattern[str] | None:
    alternatives = sorted({key for key in keys if key}, key=len, reverse=True)
    if not alternatives:
        return None
    names = "|".join(re.escape(key) for key in alternatives)
    return re.compile(rf"(?<![\w@./-])@?(?:{names})(?:[_^`]+|\|[\w-]*)?(?![\w@-])", re.IGNORECASE)


@dataclass(frozen=True)
class Handles:
    """A person's handle keys: those of every channel, and those of one channel only."""

    everywhere: frozenset[str]
    by_channel: dict[int, frozenset[str]]

    @classmethod
    def of(cls, rows: Iterable[tuple[str, int | None]]) -> Handles:
        """From (handle key, channel id or None) pairs."""
        everywhere: set[str] = set()
        by_channel: dict[int, set[str]] = {}
        for key, channel_id in rows:
            if channel_id is None:
                everywhere.add(key)
            else:
                by_channel.setdefault(channel_id, set()).add(key)
        return cls(frozenset(everywhere), {c: frozenset(k) for c, k in by_channel.items()})

    def keys_in(self, channel_id: int) -> frozenset[str]:
        return self.everywhere | self.by_channel.get(channel_id, frozenset())

    def all_keys(self) -> frozenset[str]:
        return self.everywhere.union(*self.by_channel.values())

    def is_person(self, channel_id: int, name: str | None) -> bool:
        """Whether an author or owner name is one of the person's handles in the channel."""
        return name is not None and handle_key(name) in self.keys_in(channel_id)

    def mentions(self, channel_id: int, text: str) -> list[tuple[int, int]]:
        """The (start, end) of each word of `text` naming the person in the channel."""
        pattern = _handle_pattern(self.keys_in(channel_id))
        return [match.span() for match in pattern.finditer(text)] if pattern else []

    def prefilter(self) -> str:
        """A case-insensitive PostgreSQL regular expression every message naming the person
        matches (a superset: the exact match is `mentions`); only for a person with a key."""
        return "(" + "|".join(re.escape(key) for key in sorted(self.all_keys())) + ")"
