"""Hugging Face checkpoints: bundled offline models, hub ids, local folders, GGUF files.

- :mod:`.checkpoints`: where a SPEC's files are (bundled packages, the GGUF cache, the hub);
- :mod:`.config`: reading a transformers config into family, sizes and positions;
- :mod:`.adapter`: :class:`HFModel`, the ``LoadedModel`` of a checkpoint;
- :mod:`.capture`: attention recorded through transformers' attention interface, recomputed
  exactly a head at a time (:class:`~model.hf.capture.LazyAttention`);
- :mod:`.eager`: the other route, for models whose attention bypasses that interface: their own
  eager ``output_attentions`` (bands and local blocks laid out as full maps);
- :mod:`.moves`: what attention moves and head ablation: values, output projections (found by
  the input they read) and each head's output, read or changed through the recording function;
- :mod:`.labels`: readable token labels (byte-level BPE, SentencePiece, split characters).

Never imports :mod:`model.own`.
"""

from model.hf.adapter import HFModel

__all__ = ["HFModel"]
