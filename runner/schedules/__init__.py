"""runner.schedules.manage."""
