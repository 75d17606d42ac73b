"""Evaluation of digestd against annotated gold sets: chat digests (gold windows), query-conditioned
evidence and HTML canonicalization. Every module here takes plain data and returns plain data; none
of them needs a database or a network."""
