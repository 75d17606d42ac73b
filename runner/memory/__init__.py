"""Items across digests: the items a channel tracks and their keys (items), what a message's
words say (cues), the window as the rules read it and the evidence they check (window), how a
new digest's items link to tracked ones (linking), which state changes the window shows
(transitions), the plan built from them (plan), all pure, and the store that applies it
(store)."""
