"""runner.conversations.threads."""
