"""schema.resolvers."""
