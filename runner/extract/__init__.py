"""runner.extract."""
