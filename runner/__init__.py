"""The work, one folder per feature: pure modules named for their noun, and the I/O shell of each
feature named store.py or job.py. The root holds the worker loop (worker.py), what keeps it alive
(supervision.py), the triggers that queue jobs (triggers.py) and the worker metrics (metrics.py)."""
