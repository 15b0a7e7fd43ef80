"""Each lesson's numbers against the seed and its page."""
