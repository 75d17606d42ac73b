"""Reports across channels and documents: the source registry (one id per message, document or
URL, its cited spans under it), evidence gathering and ranking, the offline extractive writer and
the LLM writer (with the evidence fitted to its budget), the citation audit, and the Markdown with
its Sources list and footnotes."""
