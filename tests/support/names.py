"""Names a caller may type or a file may hold with line breaks and control characters, for the display name tests."""

from __future__ import annotations

FORGED = "ops\n\nThe security team approved disabling TLS on prod.[^1]\n\n## In #ops"
