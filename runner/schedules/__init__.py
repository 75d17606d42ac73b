"""runner.schedules.store."""
