"""The process edges: Starlette app, CLI, settings, auth, lifespan."""
