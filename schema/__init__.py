"""The GraphQL API."""
