"""The resolvers: the query, mutation and subscription roots, one module per domain, and the
DataLoaders they batch reads through."""
