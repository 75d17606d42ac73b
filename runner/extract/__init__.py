"""The extractors behind the Extractor protocol (runner/core/extractor.py): the offline one
(rules and small learned models, no network) and the LLM one (OpenAI-compatible tool calls)."""
