"""Head statistics, aggregates over heads and span-to-span attention (heads read in row
blocks by :mod:`model.reading.blocks`).

Attention weights show where a model looked, not why it decided: none of these numbers is an
explanation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from i18n import N_, _
from model.reading.blocks import LayerSummary, layer_summary
from model.trace import AttentionTrace

# What each statistic measures, in English (marked for the catalog): show ``_(STATS[key])``.
STATS = {
    "entropy": N_("mean entropy of a query's weights (nats): low = focused, high = spread out"),
    "distance": N_("mean distance in tokens between a query and what it attends to"),
    "first_token": N_("mean weight on the first token (an 'attention sink')"),
    "previous_token": N_("mean weight on the token just before the query"),
    "self": N_("mean weight of a token on itself (the diagonal)"),
}


def head_stats(trace: AttentionTrace, name: str,
               summaries: Sequence[LayerSummary] | None = None) -> dict[str, np.ndarray]:
    """Per-head statistics of :data:`STATS`, each float64 ``[layer, head]``.

    Every head of a layer is read in one pass, in row blocks where the model ran
    (:func:`model.reading.blocks.summarise`). Self-statistics (distance, previous token, self) need
    queries and keys on one axis; for cross-attention they are NaN.

    Args:
        summaries: the layers' summaries when already made (one per layer, in order); else
            they are made with the smallest tiles and grid (the statistics do not depend on
            them).
    """
    if summaries is None:
        summaries = layer_summaries(trace, name, tile=1, grid=1)
    return {key: np.stack([s.stats[key] for s in summaries]).astype(np.float64)
            for key in STATS}


def layer_summaries(trace: AttentionTrace, name: str, progress=None, *, tile: int,
                    grid: int) -> list[LayerSummary]:
    """:func:`summary_of` every layer of ``name``.

    Args:
        progress: called with ``(layers done, layers)`` after each layer.
        tile, grid: cells a side of each head's tile and grid panel (see :func:`summary_of`).
    """
    n = trace.layers(name)
    out = []
    for layer in range(n):
        out.append(summary_of(trace, name, layer, tile=tile, grid=grid))
        if progress is not None:
            progress(layer + 1, n)
    return out


def summary_of(trace: AttentionTrace, name: str, layer: int, *, tile: int,
               grid: int) -> LayerSummary:
    """One layer's :class:`~model.reading.blocks.LayerSummary`, its heads' mean exact up to
    :data:`ROLLOUT_SIDE` tokens.

    Args:
        tile, grid: cells a side of each head's tile (the model view) and of each head in a
            grid of the layer's heads: the sizes a page draws, which the app passes
            (:mod:`viz.sizes`; model/ never imports viz).
    """
    return layer_summary(trace, name, layer, tile=tile, grid=grid, mean_side=ROLLOUT_SIDE)


# Tokens up to which rollout is exact; longer inputs roll out blocks. The analysis's precision
# (each layer of a rollout is a ROLLOUT_SIDE × ROLLOUT_SIDE matrix product), not a size drawn:
# the rollout page draws it in at most viz.sizes.HEAD_SIDE cells a side.
ROLLOUT_SIDE = 512


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
