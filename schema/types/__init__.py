"""schema.types."""
