"""The error hierarchy (runner.errors): each family catches its members, the members keep their
former bases and attributes, job outcomes stay outside the root, and the API's error codes are
the same as before."""

from __future__ import annotations

import pytest
from graphql import GraphQLError

from runner.core.cancel import Cancelled
from runner.core.vocabulary import ChunkFailed, ChunkTooLarge
from runner.documents.errors import (
    ArchiveError,
    DocumentError,
    ExtractionError,
    FetchError,
    LocatorError,
    PayloadError,
)
from runner.documents.llm_summary import SummarizerError
from runner.errors import DigestdError, InputError, LLMError, StorageError
from runner.grounding.pointers import PointerError
from runner.importers.ingest import ImportReport, ImportStopped
from runner.importers.inputs import UnusableInput
from runner.importers.slack import MetadataError
from runner.jobs.outcomes import FailNow, LostLease, RetryLater
from runner.llm.breaker import CircuitOpen
from runner.llm.client import ContextLimitExceeded, LLMCallError, MalformedResponse
from runner.llm.limits import ContextOverflow
from runner.llm.toolcall import MalformedOutput, RequestTooLarge
from runner.schedules.cron import InvalidSchedule
from runner.triggers import SubjectNotFound, TriggerRefused
from schema.errors import INTERNAL, UNAVAILABLE, code_of
from server.runtime import DatabaseUnavailable

LLM_FAILURES: list[Exception] = [
    LLMCallError("LLM request failed: HTTP 500", status=500),
    ContextLimitExceeded("too long", ContextOverflow(8192, 9000), status=400),
    MalformedResponse("HTTP 200 not a chat completion"),
    CircuitOpen("default", 30.0),
    MalformedOutput("unusable emit_chunk_summary output"),
    RequestTooLarge("needs 9000 tokens"),
    SummarizerError("malformed_output", "unusable summarizer output"),
]

INPUT_ERRORS: list[Exception] = [
    UnusableInput("not a regular file"),
    MetadataError("users.json", "not a JSON list"),
    InvalidSchedule("cron", "five fields expected"),
    TriggerRefused("question must not be empty", code="empty_question"),
    SubjectNotFound("channel", 7),
    FetchError("fetch_refused", "private address"),
    ExtractionError("encrypted", "the PDF is encrypted"),
]


def _raise(error: Exception) -> None:
    raise error


@pytest.mark.parametrize("error", LLM_FAILURES, ids=lambda e: type(e).__name__)
def test_every_llm_failure_is_caught_as_llm_error(error: Exception) -> None:
    with pytest.raises(LLMError):
        _raise(error)
    assert isinstance(error, DigestdError)
    assert not isinstance(error, InputError | StorageError)


def test_the_four_failures_callers_used_to_list_are_llm_errors() -> None:
    assert all(
        issubclass(kind, LLMError)
        for kind in (LLMCallError, CircuitOpen, MalformedOutput, RequestTooLarge)
    )


@pytest.mark.parametrize("error", INPUT_ERRORS, ids=lambda e: type(e).__name__)
def test_bad_input_is_caught_as_input_error(error: Exception) -> None:
    with pytest.raises(InputError):
        _raise(error)
    assert isinstance(error, DigestdError)
    assert not isinstance(error, LLMError | StorageError)


def test_members_keep_their_former_bases_and_attributes() -> None:
    assert isinstance(UnusableInput("x"), ValueError)
    assert isinstance(MetadataError("users.json", "x"), ValueError)
    schedule = InvalidSchedule("timezone", "unknown zone")
    assert isinstance(schedule, ValueError)
    assert (schedule.field, schedule.reason) == ("timezone", "unknown zone")
    refused = TriggerRefused("no", code="no_sources")
    assert (refused.message, refused.code) == ("no", "no_sources")
    fetch = FetchError("too_large", "over 10 MB")
    assert fetch.as_json() == {"code": "too_large", "reason": "over 10 MB"}
    summarizer = SummarizerError("request_too_large", "needs more")
    assert isinstance(summarizer, DocumentError) and summarizer.code == "request_too_large"
    assert CircuitOpen("default", 5.0).retry_in == 5.0
    assert LLMCallError("x", status=429).status == 429
    assert MalformedOutput("why").reason == "why"
    assert isinstance(DatabaseUnavailable("db down"), RuntimeError)


def test_a_database_outage_is_a_storage_error() -> None:
    with pytest.raises(StorageError):
        _raise(DatabaseUnavailable("cannot reach the database at postgresql://..."))


def test_document_errors_that_are_not_input_stay_under_the_root_only() -> None:
    for error in (LocatorError("bad", "x"), PayloadError("bad", "x"), ArchiveError("bad", "x")):
        assert isinstance(error, DocumentError | DigestdError)
        assert not isinstance(error, InputError | LLMError | StorageError)


def test_chunk_and_import_failures_are_product_errors_of_no_family() -> None:
    stopped = ImportStopped(ImportReport("in.jsonl", "jsonl"), "parse", ValueError("bad json"))
    for error in (ChunkFailed("x"), ChunkTooLarge("x", 100), stopped):
        assert isinstance(error, DigestdError)
        assert not isinstance(error, InputError | LLMError | StorageError)


def test_job_outcomes_and_pointer_verdicts_stay_outside_the_root() -> None:
    outcomes = [Cancelled(), LostLease(), RetryLater("Timeout", "x"), FailNow("code", "x")]
    for error in [*outcomes, PointerError("quote not found")]:
        assert not isinstance(error, DigestdError)


@pytest.mark.parametrize(
    "error",
    [*LLM_FAILURES, *INPUT_ERRORS, DatabaseUnavailable("down"), ChunkFailed("x")],
    ids=lambda e: type(e).__name__,
)
def test_the_api_still_hides_these_errors_as_internal(error: Exception) -> None:
    """Raised inside a resolver, none of them is a client's mistake the API shows (the resolvers
    turn refusals into typed results): the codes are the same as before the hierarchy."""
    wrapped = GraphQLError("boom", original_error=error)
    assert code_of(wrapped) == INTERNAL


def test_an_outage_under_a_storage_error_is_still_unavailable() -> None:
    error = DatabaseUnavailable("down")
    error.__cause__ = ConnectionRefusedError()
    assert code_of(GraphQLError("boom", original_error=error)) == UNAVAILABLE
