"""The words every feature speaks: the extraction contract, windows and their stored keys, chunks,
tokens, merging chunk outputs, offloading CPU work, the Extractor protocol, known items, and safe
Markdown text and display names. Pure: no database, no network."""
