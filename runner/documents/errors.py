"""Typed errors of the document path. Each carries a stable `code` a caller can branch on and a
human `reason` an API can show. Reasons never contain document or response bodies: they may be
logged, and document text is untrusted data."""

from __future__ import annotations

from runner.errors import DigestdError, InputError


class DocumentError(DigestdError):
    """A document could not be fetched, parsed, digested or verified."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "reason": self.reason}


class FetchError(DocumentError, InputError):
    """A URL was refused or its download failed (SSRF guard, size cap, timeout, bad type)."""


class ExtractionError(DocumentError, InputError):
    """Bytes could not be turned into canonical text (encrypted, no text layer, malformed)."""


class LocatorError(DocumentError):
    """A locator is malformed or does not slice to its snippet: always a bug, never hidden."""


class PayloadError(DocumentError):
    """A DigestPayload does not satisfy the v1.0 JSON schema or our extra invariants."""


class ArchiveError(DocumentError):
    """An archived canonical text is missing or fails the verification contract."""
