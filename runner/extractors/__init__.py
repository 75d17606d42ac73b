"""Extractors turn chunks into ChunkSummary and summaries into a Digest: offline or LLM."""
