"""What every job kind shares: the runner protocol and finishing a job (base), and the outcomes a
run ends with (outcomes). The job kinds live beside their features: runner/digests/job.py,
runner/documents/job.py, runner/reports/job.py."""
