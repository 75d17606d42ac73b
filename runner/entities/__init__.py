"""Entities a channel talks about: finding them in messages (mentions), what one digest says about
them and its topics (digest), and their store (store)."""
