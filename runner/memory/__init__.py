"""Items across digests: how a new digest's items link to the items a channel already tracks and
which state changes the window shows (plan, pure), and the store that applies them (store)."""
