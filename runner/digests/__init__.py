"""runner.digests."""
