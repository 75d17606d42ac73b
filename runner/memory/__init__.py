"""runner.memory."""
