"""The job kinds the worker runs (`runner/worker.py` dispatches on `job.kind`): one module per
kind, their common interface (`base`) and the outcomes a run ends with (`outcomes`).

Kept empty so that `runner.jobs.outcomes` can be imported by the pipeline without pulling in a
job runner."""
