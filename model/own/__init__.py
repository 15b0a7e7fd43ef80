"""The seed's own Transformer, written from scratch in the seed's order and names.

- :mod:`.config`: the frozen :class:`TransformerConfig` (seed 3.5 defaults);
- :mod:`.transformer`: attention, multi-head attention, FFN, post-norm residuals, the stacks,
  the decoder's KV cache;
- :mod:`.decoding`: greedy decoding with the KV cache (the one loop) and its steps;
- :mod:`.position_encoding`: the sinusoidal table and RoPE (seed 3.4 step 0);
- :mod:`.hooks`: identity hook points, the thread-safe ``capture`` context manager and
  ``intervene``, which replaces what hook points return;
- :mod:`.ablation`: heads ablated and values zeroed through ``intervene``, a layer's output;
- :mod:`.moves`: the adapter's parts for "What moves" (values, W_O, queries, keys), value
  zeroing's passes and head ablation's outcome;
- :mod:`.vocab`: the word-level vocabulary;
- :mod:`.adapter`: :class:`OwnModel`, the ``LoadedModel`` of ``own-random``;
- :mod:`.translator`, :mod:`.training_pairs`, :mod:`.train`, ``weights/``: ``own-translator``, its
  synthetic English→Chinese corpus, its training (``python -m model.own.train``) and weights;
- :mod:`.recurrent`, :mod:`.train_recurrent`: the lesson's RNN half on the same corpus and
  vocabulary, ``own-rnn`` and ``own-gru`` (one vector) and ``own-bahdanau`` (a GRU with additive
  attention), and their reproducible training (``python -m model.own.train_recurrent``).

Never imports transformers or :mod:`model.hf`.
"""
