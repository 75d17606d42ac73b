"""Queries compiled once per text into a plan that calls the resolvers directly (a faster path
than graphql-core's executor, with graphql-core as the fallback for anything else)."""
