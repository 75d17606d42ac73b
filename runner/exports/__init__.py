"""Stored digests, reports and catch-ups rendered as files people read: Markdown, HTML, JSON."""
