"""DigestPayload v1.0: the on-wire JSON of a document digest, validated on write and on read.

The JSON schema is the contract's, kept verbatim in `digest_payload_v1.schema.json`; `jsonschema`
enforces it. Two invariants the schema cannot say are checked as well:
- no key anywhere starts with `_` (the raw-content guard: `_raw_content` and other private
  metadata never reach stored JSON, API output or logs);
- every locator has the `char:S-E` / `page:N:char:S-E` form (whether it slices to its snippet
  needs the canonical text: `locators.verify_locator`, called by the digest and the archive).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema

from runner.documents.errors import LocatorError, PayloadError
from runner.documents.locators import parse_locator

PAYLOAD_VERSION = "1.0"
DIGEST_CONTENT_TYPE = "digest/v1"
SCHEMA_FILE = "digest_payload_v1.schema.json"


@dataclass(frozen=True)
class EvidenceSnippet:
    text: str
    locator: str
    relevance_score: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "locator": self.locator, "relevance_score": self.relevance_score}


@dataclass(frozen=True)
class DigestPayload:
    query_hash: str  # 8 hex
    summary: str
    original_chars: int
    digest_chars: int
    compression_ratio: float
    source_text_hash: str  # "sha256:<64 hex>"
    key_points: list[str] = field(default_factory=list)
    evidence_snippets: list[EvidenceSnippet] = field(default_factory=list)
    version: str = PAYLOAD_VERSION
    content_type: str = DIGEST_CONTENT_TYPE

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "content_type": self.content_type,
            "query_hash": self.query_hash,
            "summary": self.summary,
            "key_points": list(self.key_points),
            "evidence_snippets": [snippet.to_dict() for snippet in self.evidence_snippets],
            "original_chars": self.original_chars,
            "digest_chars": self.digest_chars,
            "compression_ratio": self.compression_ratio,
            "source_text_hash": self.source_text_hash,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DigestPayload:
        """A payload from validated data (`validate_payload_dict` first)."""
        return cls(
            version=data["version"],
            content_type=data["content_type"],
            query_hash=data["query_hash"],
            summary=data["summary"],
            key_points=list(data["key_points"]),
            evidence_snippets=[
                EvidenceSnippet(
                    text=item["text"],
                    locator=item["locator"],
                    relevance_score=float(item["relevance_score"]),
                )
                for item in data["evidence_snippets"]
            ],
            original_chars=int(data["original_chars"]),
            digest_chars=int(data["digest_chars"]),
            compression_ratio=float(data["compression_ratio"]),
            source_text_hash=data["source_text_hash"],
        )


@lru_cache(maxsize=1)
def payload_schema() -> dict[str, Any]:
    """The JSON schema of DigestPayload v1.0, as shipped next to this module."""
    text = resources.files("runner.documents").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(payload_schema())


def _private_keys(value: Any, path: str = "$") -> list[str]:
    if isinstance(value, dict):
        found = [f"{path}.{key}" for key in value if str(key).startswith("_")]
        for key, item in value.items():
            found += _private_keys(item, f"{path}.{key}")
        return found
    if isinstance(value, list):
        return [
            key
            for index, item in enumerate(value)
            for key in _private_keys(item, f"{path}[{index}]")
        ]
    return []


def validate_payload_dict(data: Any) -> None:
    """Raise `PayloadError` unless `data` is a valid DigestPayload v1.0 (schema + invariants).
    Error reasons name the failing field, never its content."""
    errors = sorted(_validator().iter_errors(data), key=lambda error: list(error.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(part) for part in first.absolute_path) or "(root)"
        raise PayloadError("schema", f"{where}: fails '{first.validator}' ({len(errors)} error(s))")
    private = _private_keys(data)
    if private:
        raise PayloadError("private_field", f"private keys must not be serialized: {private[:3]}")
    for index, snippet in enumerate(data["evidence_snippets"]):
        try:
            parse_locator(snippet["locator"])
        except LocatorError as error:
            raise PayloadError("locator", f"evidence_snippets/{index}: {error.reason}") from None


def serialize_payload(payload: DigestPayload | dict[str, Any]) -> str:
    """Validated, deterministic JSON (keys in schema order, UTF-8 text, no spaces)."""
    data = payload.to_dict() if isinstance(payload, DigestPayload) else payload
    validate_payload_dict(data)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def deserialize_payload(content: str | bytes) -> DigestPayload:
    """Parse and validate stored JSON; `PayloadError` when it is not a valid payload."""
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise PayloadError("not_json", "the stored digest is not JSON") from None
    validate_payload_dict(data)
    return DigestPayload.from_dict(data)
