"""Attention read from a store in row blocks on the model's device (:mod:`.blocks`), and several
sentences run as one padded batch (:mod:`.batch`)."""
