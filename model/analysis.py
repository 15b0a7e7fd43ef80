"""Numbers computed from a trace (numpy only): rollout, head statistics, aggregates, spans.

Attention rollout follows Abnar & Zuidema (2020): average the heads of each layer, add the
identity for the residual connection, renormalise the rows, and multiply through the layers.
Attention weights show where a model looked, not why it decided: none of these numbers is an
explanation.
"""

from __future__ import annotations

import numpy as np

from .trace import AttentionTrace

STATS = {
    "entropy": "mean entropy of a query's weights (nats): low = focused, high = spread out",
    "distance": "mean distance in tokens between a query and what it attends to",
    "first_token": "mean weight on the first token (an 'attention sink')",
    "previous_token": "mean weight on the token just before the query",
    "self": "mean weight of a token on itself (the diagonal)",
}


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


def head_stats(trace: AttentionTrace, name: str) -> dict[str, np.ndarray]:
    """Per-head statistics of :data:`STATS`, each float64 ``[layer, head]``.

    Self-statistics (distance, previous token, self) need queries and keys on one axis; for
    cross-attention they are NaN.
    """
    n_layers, n_heads = trace.layers(name), trace.n_heads
    q_tokens, k_tokens = trace.axes(name)
    same_axis = name.endswith(".self")
    n_q, n_k = len(q_tokens), len(k_tokens)
    q_pos, k_pos = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
    stats = {key: np.full((n_layers, n_heads), np.nan) for key in STATS}
    for layer in range(n_layers):
        for head in range(n_heads):
            w = trace.weights(name, layer, head).astype(np.float64)  # [query, key]
            with np.errstate(divide="ignore", invalid="ignore"):
                plogp = np.where(w > 0, w * np.log(w), 0.0)
            stats["entropy"][layer, head] = -plogp.sum(-1).mean()
            stats["first_token"][layer, head] = w[:, 0].mean()
            if same_axis:
                stats["distance"][layer, head] = (w * np.abs(q_pos - k_pos)).sum(-1).mean()
                stats["self"][layer, head] = np.diagonal(w).mean()
                if n_q > 1:
                    stats["previous_token"][layer, head] = np.diagonal(w, offset=-1).mean()
    return stats


def aggregate(trace: AttentionTrace, name: str, layers, heads) -> np.ndarray:
    """Weights averaged over the chosen layers and heads: float64 ``[query, key]``."""
    layers, heads = list(layers), list(heads)
    if not layers or not heads:
        raise ValueError("choose at least one layer and one head")
    total = sum(trace.weights(name, layer, head).astype(np.float64)
                for layer in layers for head in heads)
    return total / (len(layers) * len(heads))


def span_attention(weights: np.ndarray, queries: tuple[int, int],
                   keys: tuple[int, int]) -> tuple[np.ndarray, float]:
    """Attention from one span of tokens to another.

    Args:
        weights: ``[query, key]``.
        queries, keys: half-open ``(start, stop)`` spans.

    Returns:
        ``(block [span queries, span keys], mass)`` where mass is the average over the span's
        queries of the weight they put on the key span (0..1).
    """
    (qa, qb), (ka, kb) = queries, keys
    if not (0 <= qa < qb <= weights.shape[0] and 0 <= ka < kb <= weights.shape[1]):
        raise ValueError(f"spans {queries} and {keys} do not fit a {weights.shape} matrix")
    block = weights[qa:qb, ka:kb]
    return block, float(block.sum(-1).mean())
