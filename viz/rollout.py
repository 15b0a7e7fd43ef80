"""A rollout drawn: one layer of an attention rollout pooled again to the cells a page draws,
its colours fitted to the blocks drawn.

A rollout is exact up to :data:`model.analysis.statistics.ROLLOUT_SIDE` tokens and rolls out
blocks of tokens past it; either way it can hold more rows than a heatmap draws
(:data:`viz.sizes.HEAD_SIDE`), so it is pooled again here, as :mod:`viz.pooling` pools any
long head.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from viz.heatmap import attention_heatmap
from viz.pooling import block_factor, pool_weights
from viz.sizes import HEAD_SIDE


@dataclass(frozen=True)
class DrawnRollout:
    """What a rollout heatmap draws.

    Attributes:
        weights: ``[query, key]``, or blocks of ``factor`` tokens a side.
        factor: tokens a side of a drawn cell (1: token by token).
        zmax: the weight drawn darkest.
    """

    weights: np.ndarray
    factor: int
    zmax: float


def blocks_peak(drawn: np.ndarray, n_tokens: int, step: int, first_key: int = 0) -> float:
    """The largest cell of a rollout drawn in blocks of ``step`` tokens a side, away from the
    cells that hold a token's weight on itself (the residual keeps those large): the colour
    ceiling of a fitted long rollout.

    Args:
        drawn: ``[query blocks, key blocks]``.
        n_tokens: the tokens of the query axis.
        step: tokens per block, on both axes.
        first_key: the token of the first key drawn (the keys before it were left out).
    """
    drawn = np.asarray(drawn, dtype=np.float64)
    own = np.zeros(drawn.shape, dtype=bool)
    tokens = np.arange(first_key, n_tokens)
    rows, cols = tokens // step, (tokens - first_key) // step
    inside = cols < drawn.shape[1]
    own[rows[inside], cols[inside]] = True
    rest = np.where(own, -np.inf, drawn)
    return max(float(rest.max()) if rest.size else 0.0, 1e-6)


def drawn_rollout(flow, n_tokens: int, *, factor: int = 1, first_key: int = 0,
                  zmax: float = 1.0, max_side: int = HEAD_SIDE) -> DrawnRollout:
    """One layer of a rollout as drawn in at most ``max_side`` cells a side.

    Args:
        flow: ``[query, key]``, or blocks of ``factor`` tokens a side (the rollout of a long
            input), its first key (block) perhaps left out.
        n_tokens: the tokens of the query axis.
        factor: tokens a side of each cell of ``flow``.
        first_key: the token of the first key in ``flow`` (the keys before it were left out).
        zmax: the colour ceiling fitted to ``flow`` (1: not fitted). A fitted ceiling is
            fitted again to the blocks drawn (:func:`blocks_peak`) when cells are blocks.
    """
    flow = np.asarray(flow)
    again = block_factor(max(flow.shape), max_side)  # blocks pooled again to be drawn
    drawn = pool_weights(flow, again, again) if again > 1 else flow
    step = factor * again  # tokens a side of a drawn cell
    if zmax < 1 and step > 1:  # fitted to what is drawn
        zmax = blocks_peak(drawn, n_tokens, step, first_key)
    return DrawnRollout(drawn, step, zmax)


def rollout_heatmap(drawn: DrawnRollout, query_tokens: Sequence[str],
                    key_tokens: Sequence[str], *, allowed=None, title: str = "",
                    y_title: str | None = None, query_hover: Sequence[str] | None = None,
                    special: tuple[Sequence[int], Sequence[int]] = ((), ()),
                    max_side: int = HEAD_SIDE) -> go.Figure:
    """The heatmap of a :class:`DrawnRollout` (see :func:`viz.attention_heatmap`): blocks
    (of blocks) named by their tokens.

    Args:
        query_tokens, key_tokens: the tokens of the axes drawn, per token.
        allowed: the mask per token.
        special, query_hover: as :func:`viz.attention_heatmap` (unused in blocks).
    """
    return attention_heatmap(
        drawn.weights, query_tokens, key_tokens, allowed=allowed, query_hover=query_hover,
        y_title=y_title, special=special, title=title, zmax=drawn.zmax, max_side=max_side,
        factors=(drawn.factor, drawn.factor))
