"""Head statistics, aggregates over heads and span-to-span attention (numpy only).

Attention weights show where a model looked, not why it decided: none of these numbers is an
explanation.
"""

from __future__ import annotations

import numpy as np

from i18n import N_, _

from ..trace import AttentionTrace

# What each statistic measures, in English (marked for the catalog): show ``_(STATS[key])``.
STATS = {
    "entropy": N_("mean entropy of a query's weights (nats): low = focused, high = spread out"),
    "distance": N_("mean distance in tokens between a query and what it attends to"),
    "first_token": N_("mean weight on the first token (an 'attention sink')"),
    "previous_token": N_("mean weight on the token just before the query"),
    "self": N_("mean weight of a token on itself (the diagonal)"),
}


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
        raise ValueError(_("choose at least one layer and one head"))
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


def stats_table(stats: dict[str, np.ndarray], metrics) -> list[dict]:
    """One row per head, ``{"layer", "head", metric: value, ...}``, layer by layer."""
    metrics = list(metrics)
    n_layers, n_heads = next(iter(stats.values())).shape
    return [{"layer": layer, "head": head,
             **{m: float(stats[m][layer, head]) for m in metrics}}
            for layer in range(n_layers) for head in range(n_heads)]


def defined_metrics(stats: dict[str, np.ndarray]) -> list[str]:
    """The metrics of :data:`STATS` that hold a number somewhere (cross-attention has no
    distance, previous-token or self statistic)."""
    return [m for m in STATS if not np.isnan(stats[m]).all()]
