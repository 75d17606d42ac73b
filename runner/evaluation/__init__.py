"""Evaluation of digestd against annotated gold sets: chat digests (gold windows), query-conditioned
evidence and HTML canonicalization. It drives the real pipeline in-process (a fake model server
stands in for an LLM) and never needs the API server."""
