"""Whom a chat message is for, as chat clients write it: a leading addressee ("bob: ...",
"@bob, ..."). One spelling for the offline extractor's threads, entity finding and channel
memory, which all need to tell "said to bob" from "said about bob"."""

from __future__ import annotations

import re

# The name before the first ":" or "," that a space follows; 2 to 40 characters, lazily, so
# "bob:: hi" names "bob". An "@" before it is the client's, not the name's.
LEADING_ADDRESS = re.compile(r"^\s*@?([^\s:,@]{2,40}?)\s*[:,]\s")
