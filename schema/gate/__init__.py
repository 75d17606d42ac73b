"""schema.gate."""
