"""The warning a job gives when the offline rules read what the model could not: one wording for
every kind of job (the chunks of a channel digest, the summary of a document digest), so a client
reads what fell back and why the same way wherever it happens.

A warning opens with what fell back (`3 chunks extracted by the offline rules (0-2)`), then
each reason with the parts it explains (`; chunks 0-1: circuit open ...`). The reasons are the LLM
errors' own messages (runner.errors.LLMError: already redacted, never the model's output nor the
key), each cut to `REASON_CHARS`; reasons that do not fit in `WARNING_CHARS` are left out (`; ...`),
never what fell back.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.core.vocabulary import PipelineWarning

# Characters of one reason, and of the whole warning.
REASON_CHARS = 240
WARNING_CHARS = 1000


def offline_warning(code: str, what: str, reasons: Sequence[tuple[str, str]]) -> PipelineWarning:
    """`code` with `what` fell back, then each `(parts, reason)` as `; parts: reason`, as many
    as fit (see the module docstring)."""
    message = what
    for parts, reason in reasons:
        part = f"{parts}: {reason[:REASON_CHARS]}"
        if len(message) + len(part) + 2 > WARNING_CHARS:
            message += "; ..."
            break
        message += f"; {part}"
    return PipelineWarning(code, message)
