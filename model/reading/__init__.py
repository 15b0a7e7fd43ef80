"""Attention read from a store in row blocks on the model's device (:mod:`.blocks`), several
sentences run as one padded batch (:mod:`.batch`), and the one kernel of the per-head statistics
that both read with (:mod:`.statistics`)."""
