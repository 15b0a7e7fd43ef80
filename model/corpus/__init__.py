"""Attention over many sentences: the sentences read from users' files (:mod:`.sentences`), the
engine that runs them in batches in this process or on Ray (:mod:`.engine`), and the per-head
statistics of a padded batch (:mod:`.statistics`)."""
