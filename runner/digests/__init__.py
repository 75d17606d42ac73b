"""A channel digest from window to rows: which messages it reads (window), the map-reduce over
them (pipeline), what a run cost (stats), the rows it writes (store) and the job that runs it (job)."""
