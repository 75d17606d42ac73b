"""The product's exceptions: one root, families below it, so a caller catches the family it can
handle (`except LLMError`) instead of a tuple of classes that drifts as new ones appear.

    DigestdError          anything digestd raises on purpose
    ├── LLMError          an LLM call or its output failed (runner.llm: LLMCallError and its
    │                     ContextLimitExceeded, MalformedResponse, CircuitOpen, MalformedOutput,
    │                     RequestTooLarge; the document summarizer's SummarizerError)
    ├── InputError        input we refuse, with where and why (an unusable import, a Slack
    │                     metadata file, a document that cannot be fetched or read, a schedule
    │                     that cannot run, a refused trigger)
    └── StorageError      the database cannot be used right now (server.runtime's
                          DatabaseUnavailable)

The concrete classes live beside the code that raises them and keep their names, attributes and
former bases (an `InvalidSchedule` is still a ValueError), so existing `except` clauses behave as
before. Classes that are neither family (a chunk given up, an import stopped half-way, a document
path error that is a bug, such as a locator that does not slice) sit directly under the root.

Left outside the root on purpose:
- Job outcomes (runner.jobs.outcomes: Cancelled, LostLease, RetryLater, FailNow) are control
  flow, not failures to classify: they end a run where it stands and the worker maps each to one
  record on the job. Catching DigestdError must never swallow a cancellation or a lost lease.
- A pointer or claim the model got wrong (runner.grounding.pointers.PointerError) is a validation verdict
  turned into a dropped item with a reason, never raised past the validator.
- The database layer raises the driver's own errors: `db` imports nothing of `runner`, and
  `db.outage.is_database_outage` says which of them mean "unavailable". Wrapping every query to
  re-raise a StorageError would add a layer to each call for no caller that needs it, so
  StorageError is raised only at an edge that reports an outage as such. db's own ValueErrors of
  client input (db.pages: InvalidCursor, InvalidSearch, InvalidPageSize) stay there for the same
  reason; the API maps them to their codes.

Pure: no I/O and no imports, so every layer can use it.
"""

from __future__ import annotations


class DigestdError(Exception):
    """Root of the errors digestd raises on purpose."""


class LLMError(DigestdError):
    """An LLM request failed for good (after retries), the endpoint's breaker refused it, or
    the model's output was unusable; the message is already redacted."""


class InputError(DigestdError):
    """Input digestd refuses; the message says where and why, written for whoever sent it."""


class StorageError(DigestdError):
    """The database cannot be used right now (unreachable, refusing, not answering in time)."""


__all__ = ["DigestdError", "InputError", "LLMError", "StorageError"]
