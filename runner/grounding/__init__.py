"""runner.grounding."""
