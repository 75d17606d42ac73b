"""Conversations of a channel: the reply-link model (disentangle/), the threads it makes
(threads), and the store that threads a window before it is digested (store)."""
