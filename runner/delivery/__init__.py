"""Delivery of digests and job events to where people read: webhooks, Slack, Discord, e-mail."""
