"""runner.core."""
