"""Digest cache keys:

    digest:{impl_version}:{source_id}:{content_hash[:16]}:{query_hash[:8]}:{config_hash[:8]}

- `content_hash`: the hex of `source_text_hash`, i.e. SHA-256 of the canonical text (a digest is
  a function of the canonical text, so two raw forms that canonicalize alike share digests);
- `query_hash`: SHA-256 of the query after NFC, whitespace collapsing and stripping (case is
  kept: an LLM summarizer sees it); its first 8 hex are also the payload's `query_hash`;
- `config_hash`: SHA-256 of the config tuple (`DigestConfig.hash_inputs`) plus the summarizer's
  fingerprint (the offline summarizer and an LLM, or two models, give different digests for the same
  config);
- `impl_version`: bumped whenever the algorithm's output changes.
Any change of content, query, config, summarizer or version is a different key: a miss.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata

from runner.documents.policy import DigestConfig

DIGEST_IMPL_VERSION = "1.0"


def normalize_query(query: str) -> str:
    return " ".join(unicodedata.normalize("NFC", query).split())


def query_hash(query: str) -> str:
    """Full SHA-256 hex of the normalized query."""
    return hashlib.sha256(normalize_query(query).encode("utf-8")).hexdigest()


def config_hash(config: DigestConfig, summarizer_fingerprint: str) -> str:
    inputs = [*config.hash_inputs(), summarizer_fingerprint]
    encoded = json.dumps(inputs, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def content_hash(source_text_hash: str) -> str:
    """The hex part of `sha256:<hex>`."""
    prefix, _, digest = source_text_hash.partition(":")
    if prefix != "sha256" or len(digest) != 64:
        raise ValueError("source_text_hash must be 'sha256:<64 hex>'")
    return digest


def digest_cache_key(
    source_id: str,
    source_text_hash: str,
    query: str,
    config: DigestConfig,
    summarizer_fingerprint: str,
    impl_version: str = DIGEST_IMPL_VERSION,
) -> str:
    return (
        f"digest:{impl_version}:{source_id}:{content_hash(source_text_hash)[:16]}:"
        f"{query_hash(query)[:8]}:{config_hash(config, summarizer_fingerprint)[:8]}"
    )
