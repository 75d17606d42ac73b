"""A person's catch-up across channels: their handles and how a message names them (handles), what
waits on them per channel with citations (digest), how channels are ranked (ranking), and the
reads and writes of people, handles and read markers (store)."""
