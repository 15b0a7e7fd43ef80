"""Several sentences run as one padded batch: one trace per sentence, and every sentence's
weights of a layer at once for statistics over a corpus (:mod:`model.corpus.statistics`).

Padding never reaches a number: sequence ``b``'s real queries and keys come first in its
slice of :meth:`AttentionBatch.weights`, zeros after them, and :attr:`AttentionBatch.lengths`
says where they end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.reading.blocks import _tensor
from model.trace import AttentionTrace


@dataclass(frozen=True)
class AttentionBatch:
    """What one batched run of a model saw.

    Attributes:
        traces: one :class:`~model.trace.AttentionTrace` per sentence, padding left out.
        weights: ``(kind, layer)`` → float32 ``[sentence, head, query, key]`` on the model's
            device: each sentence's real queries and keys first, zeros after them.
    """

    traces: tuple[AttentionTrace, ...]
    weights: Callable[[str, int], torch.Tensor]

    def lengths(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Real queries and keys of each sentence for kind ``name``: two int arrays
        ``[sentence]``."""
        axes = [t.axes(name) for t in self.traces]
        return (np.array([len(q) for q, _k in axes]), np.array([len(k) for _q, k in axes]))


def padded_from_traces(traces: Sequence[AttentionTrace], device=None) -> AttentionBatch:
    """An :class:`AttentionBatch` of traces made one at a time (the own models): a layer's
    weights are each trace's exact blocks, padded with zeros."""
    traces = tuple(traces)

    def weights(name: str, layer: int) -> torch.Tensor:
        sizes = [tuple(len(a) for a in t.axes(name)) for t in traces]
        n_heads = traces[0].n_heads
        out = torch.zeros((len(traces), n_heads, max(q for q, _k in sizes),
                           max(k for _q, k in sizes)), dtype=torch.float32, device=device)
        for b, trace in enumerate(traces):
            for block in trace.blocks(name, layer):
                w = _tensor(block.weights)  # [head, rows, keys]
                out[b, :, block.start:block.start + w.shape[1], :w.shape[2]] = w.to(out.device)
        return out

    return AttentionBatch(traces, weights)
