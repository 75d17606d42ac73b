"""Reports across channels and documents: the source registry, evidence gathering and ranking, the
offline extractive writer and the LLM writer (with the evidence fitted to its budget), the citation
audit and the Markdown."""
