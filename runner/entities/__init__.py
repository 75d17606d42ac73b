"""runner.entities.mentions."""
