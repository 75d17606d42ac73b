"""Digest schedules: cron slots in a time zone (cron, pure), creating and managing schedules
(store), and the workers' tick that fires the due ones (tick)."""
