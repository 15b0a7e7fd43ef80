"""What the lessons compute: the network re-run with hooks (residual streams, queries, keys and
values), positions removed or shuffled, generation steps, and the seed's worked numbers."""
