"""The work: the worker loop and the pipeline normalize → chunk → map → reduce → validate → store."""
