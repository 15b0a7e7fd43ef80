"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack (numpy only).

Average the heads of each layer, add the identity for the residual connection, renormalise the
rows, and multiply through the layers. It is a rough picture of how information flows, not an
explanation of a decision.
"""

from __future__ import annotations

import numpy as np

from ..trace import AttentionTrace


def rollout(trace: AttentionTrace, name: str, residual: float = 0.5) -> np.ndarray:
    """Attention rollout through every layer of a self-attention stack.

    Args:
        trace: the trace.
        name: ``encoder.self`` or ``decoder.self``.
        residual: weight of the identity added for the residual stream (0.5 in the paper).

    Returns:
        float64 ``[layer, query, key]``: entry l is the rollout through layers 0..l.
    """
    if not name.endswith(".self"):
        raise ValueError(f"rollout follows one token stream; {name} is cross-attention")
    n_layers = trace.layers(name)
    n = len(trace.axes(name)[0])
    result = np.eye(n)
    out = np.empty((n_layers, n, n))
    for layer in range(n_layers):
        mixed = residual * np.eye(n) + (1 - residual) * trace.mean_weights(name, layer)
        mixed /= mixed.sum(axis=-1, keepdims=True)
        result = mixed @ result
        out[layer] = result
    return out
