"""Grounding: normalized text, pointers that must quote it exactly, claim support, citations and
footnotes, BM25 ranking, and the validation every extractor output passes before it is stored.
Pure: no database, no network."""
