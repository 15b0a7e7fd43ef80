"""Attention heatmaps: one head, and all heads of a layer side by side.

Rows are query tokens (the one looking), columns key tokens (the one looked at), as in seed 4.3.
Masked cells (forbidden by the model's mask) are drawn grey, apart from the white of a weight
that is merely zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _
from viz.labels import axis_ticks, check_weights, escape, fit_ticks
from viz.pooling import block_factor, block_labels, pool_allowed, pool_weights
from viz.sizes import GRID_SIDE, HEAD_SIDE, SCREEN_CHART_PX
from viz.style import (
    HIGHLIGHT_COLOR,
    MASK_COLOR,
    SMALL_TICK_FONT,
    TRANSPARENT,
    WEIGHT_SCALE,
    head_name,
    themed,
)

HOVER = N_("query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.4f}"
           "<extra></extra>")
# Past HOVER_CELLS cells a figure names its cells by row and column (their tokens are on the
# axes): naming each cell's two tokens in the figure cost 10 MB for a 256 × 256 heatmap.
HOVER_CELLS = 64 * 64
POSITION_HOVER = N_("query row %{y}<br>key column %{x}<br>weight %{z:.4f}<extra></extra>")
POSITION_MASK_HOVER = N_("query row %{y}<br>key column %{x}<br>masked (−∞ before softmax)"
                         "<extra></extra>")
BLOCK_HOVER = N_("query block %{y}<br>key block %{x}<br>weight %{z:.4f}<extra></extra>")
BLOCK_MASK_HOVER = N_("query block %{y}<br>key block %{x}<br>masked (−∞ before softmax)"
                      "<extra></extra>")
MASK_HOVER = N_("query %{customdata[0]}<br>key %{customdata[1]}<br>masked (−∞ before softmax)"
                "<extra></extra>")


def _hover_data(query_tokens: Sequence[str], key_tokens: Sequence[str],
                query_hover: Sequence[str] | None = None,
                key_hover: Sequence[str] | None = None) -> np.ndarray:
    """``[query, key, 2]`` strings: 'i: token' of the query and of the key of each cell
    (``query_hover`` and ``key_hover`` replace them when given)."""
    for hover, tokens, what in ((query_hover, query_tokens, "query"),
                                (key_hover, key_tokens, "key")):
        if hover is not None and len(hover) != len(tokens):
            raise ValueError(f"{len(hover)} {what} hovers for {len(tokens)} {what} tokens")
    q = escape(query_hover) if query_hover is not None else [
        f"{i}: {t}" for i, t in enumerate(escape(query_tokens))]
    k = escape(key_hover) if key_hover is not None else [
        f"{j}: {t}" for j, t in enumerate(escape(key_tokens))]
    grid = np.empty((len(q), len(k), 2), dtype=object)
    grid[..., 0] = np.array(q, dtype=object)[:, None]
    grid[..., 1] = np.array(k, dtype=object)[None, :]
    return grid


def _head_traces(weights, allowed, customdata, coloraxis="coloraxis", pooled: bool = False):
    """The weight heatmap and, where anything is masked, the grey mask layer.

    ``customdata`` names each cell's query and key (see :func:`_hover_data`); None (a large
    figure) names its row and column, or its blocks when ``pooled``, and sends float32.
    """
    z = weights.copy()
    if customdata is None:
        z = z.astype(np.float32)
        hover, mask_hover = (BLOCK_HOVER, BLOCK_MASK_HOVER) if pooled else (
            POSITION_HOVER, POSITION_MASK_HOVER)
    else:
        hover, mask_hover = HOVER, MASK_HOVER
    traces = []
    if allowed is not None and not allowed.all():
        z[~allowed] = np.nan
        mask_z = np.where(allowed, np.nan, 1.0).astype(z.dtype)
        traces.append(go.Heatmap(
            z=mask_z, customdata=customdata, hovertemplate=_(mask_hover), showscale=False,
            colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]], name="masked", hoverongaps=False))
    traces.insert(0, go.Heatmap(
        z=z, customdata=customdata, hovertemplate=_(hover), coloraxis=coloraxis,
        name="weights", hoverongaps=False))
    return traces


def _cell_names(query_tokens, key_tokens, query_hover=None, key_hover=None, heads: int = 1):
    """Each cell's query and key for the hover (:func:`_hover_data`), or None past
    :data:`HOVER_CELLS` cells in all."""
    if heads * len(query_tokens) * len(key_tokens) > HOVER_CELLS:
        return None
    return _hover_data(query_tokens, key_tokens, query_hover, key_hover)


def _check_allowed(allowed, shape) -> np.ndarray | None:
    if allowed is None:
        return None
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape != shape:
        raise ValueError(f"mask of shape {allowed.shape} does not match weights {shape}")
    return allowed


def _pooled(weights, allowed, query_tokens, key_tokens, max_side: int,
            factors: tuple[int, int] | None = None):
    """Pool long axes into blocks; returns weights, mask, labels and a note for the title.

    ``factors``: the weights are already pooled by these tokens per query and key block (the
    model pooled them where it ran); ``allowed`` is still per token.
    """
    n_q, n_k = len(query_tokens), len(key_tokens)
    if factors is None:
        fq, fk = block_factor(n_q, max_side), block_factor(n_k, max_side)
        if fq != 1 or fk != 1:
            weights = pool_weights(weights, fq, fk)
    else:
        fq, fk = factors
    if fq == fk == 1:
        return weights, allowed, list(query_tokens), list(key_tokens), ""
    allowed = None if allowed is None else pool_allowed(allowed, fq, fk)
    note = _("{n_q}×{n_k} tokens in blocks of {fq}×{fk}: rows average the block's queries, "
             "cells sum the block's keys").format(n_q=n_q, n_k=n_k, fq=fq, fk=fk)
    return weights, allowed, block_labels(query_tokens, fq), block_labels(key_tokens, fk), note


def _check_pooled(weights, query_tokens, key_tokens, factors, ndim: int = 2) -> np.ndarray:
    """Weights given already pooled by ``factors`` (None: per token) checked against the axes."""
    if factors is None:
        return check_weights(weights, query_tokens, key_tokens, ndim=ndim)
    fq, fk = (int(f) for f in factors)
    if fq < 1 or fk < 1:
        raise ValueError(f"pooling factors must be at least 1, not {factors}")
    blocks_q, blocks_k = -(-len(query_tokens) // fq), -(-len(key_tokens) // fk)
    return check_weights(weights, [""] * blocks_q, [""] * blocks_k, ndim=ndim)


HIGHLIGHT_WIDTH = 4  # px: the outline of a highlighted cell


def _outline(query: int, key: int, n_q: int, n_k: int, max_side: int,
             factors: tuple[int, int] | None = None) -> dict:
    """A rectangle shape around cell ``(query, key)`` (around its block on a pooled axis)."""
    fq, fk = factors or (block_factor(n_q, max_side), block_factor(n_k, max_side))
    row, col = query // fq, key // fk
    return {"type": "rect", "x0": col - 0.5, "x1": col + 0.5, "y0": row - 0.5, "y1": row + 0.5,
            "line": {"color": HIGHLIGHT_COLOR, "width": HIGHLIGHT_WIDTH},
            "fillcolor": TRANSPARENT, "layer": "above"}


def _check_highlight(highlight, n_q: int, n_k: int) -> tuple[int, int] | None:
    if highlight is None:
        return None
    query, key = (int(i) for i in highlight)
    if not (0 <= query < n_q and 0 <= key < n_k):
        raise ValueError(f"cell {highlight} is outside the {n_q}×{n_k} weights")
    return query, key


def attention_heatmap(weights, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
                      allowed=None, title: str = "", x_title: str | None = None,
                      y_title: str | None = None, max_side: int = HEAD_SIDE,
                      special: tuple[Sequence[int], Sequence[int]] = ((), ()),
                      zmax: float = 1.0, query_hover: Sequence[str] | None = None,
                      highlight: tuple[int, int] | None = None,
                      factors: tuple[int, int] | None = None,
                      key_hover: Sequence[str] | None = None) -> go.Figure:
    """Heatmap of one head's attention.

    Args:
        weights: ``[query, key]`` weights (rows sum to 1).
        query_tokens: labels of the rows.
        key_tokens: labels of the columns.
        allowed: optional bool ``[query, key]``; False cells are drawn as masked.
        title: the figure's title.
        x_title, y_title: axis titles (default "key (attended to)" and "query (attending)").
        max_side: longest axis drawn cell by cell; longer axes are pooled into blocks of
            tokens (see :mod:`viz.pooling`) and the title says so.
        special: positions of special tokens on the query and key axes, drawn grey italic.
        zmax: the weight drawn darkest (1 by default; lower it to see long inputs' spread).
        query_hover: what hovering a row says of its query (default ``"i: token"``); unused
            when long axes are pooled into blocks.
        highlight: ``(query, key)``: a cell outlined (its block when the axes are pooled),
            e.g. a pair a lesson points at.
        factors: ``weights`` are already pooled, by this many tokens per query block and per
            key block (see :func:`model.reading.blocks.pool`); the tokens and ``allowed`` are still
            per token.
        key_hover: what hovering a column says of its key (default ``"j: token"``), e.g. the
            positions of a region in the whole input; unused when pooled.

    Returns:
        a figure whose first trace holds the weights (masked cells NaN) with a colour bar; a
        highlighted cell is the layout's one shape, outlined in HIGHLIGHT_COLOR.
    """
    weights = _check_pooled(weights, query_tokens, key_tokens, factors)
    shape = (len(query_tokens), len(key_tokens))
    allowed = _check_allowed(allowed, shape)
    highlight = _check_highlight(highlight, *shape)
    outline = None if highlight is None else _outline(*highlight, *shape, max_side, factors)
    x_title = _("key (attended to)") if x_title is None else x_title
    y_title = _("query (attending)") if y_title is None else y_title
    weights, allowed, query_tokens, key_tokens, note = _pooled(
        weights, allowed, query_tokens, key_tokens, max_side, factors)
    if note:
        special = ((), ())  # block labels name ranges, not tokens
        title = f"{title}<br><sup>{note}</sup>" if title else note
        query_hover = key_hover = None
    fig = go.Figure(_head_traces(weights, allowed,
                                 _cell_names(query_tokens, key_tokens, query_hover, key_hover),
                                 pooled=bool(note)))
    n_q, n_k = weights.shape
    cell = max(6, min(48, 640 // max(n_q, n_k)))
    fig.update_layout(
        title=title, coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": zmax,
                                "colorbar": {"title": {"text": _("weight")}}},
        # tall enough for the rows, and for the y title along a short plot (7 px a character)
        height=max(320, 140 + cell * n_q, 150 + 7 * len(y_title)), width=None,
        # a line of title, and one more for each line under it
        margin={"l": 60, "r": 30, "t": 40 + 20 * (1 + title.count("<br>")) if title else 30,
                "b": 50})
    # every label, then as many as fit a 1024 px screen's chart (a page fits them again to the
    # width it draws the chart at: viz.present)
    fig.update_xaxes(title_text=x_title, side="bottom", showgrid=False, zeroline=False,
                     **axis_ticks(key_tokens, n_k, special=special[1]))
    fig.update_yaxes(title_text=y_title, autorange="reversed", showgrid=False, zeroline=False,
                     **axis_ticks(query_tokens, n_q, special=special[0]))
    fit_ticks(fig, SCREEN_CHART_PX)
    if outline is not None:
        fig.add_shape(**outline)
    return themed(fig)


def heads_grid(layer_weights, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
               allowed=None, cols: int = 4, title: str = "", max_side: int = GRID_SIDE,
               zmax: float = 1.0, query_hover: Sequence[str] | None = None,
               highlight: tuple[int, int, int] | None = None,
               factors: tuple[int, int] | None = None,
               titles: Sequence[str] | None = None) -> go.Figure:
    """All heads of one layer as small heatmaps on one colour scale.

    Args:
        layer_weights: ``[head, query, key]`` weights.
        query_tokens, key_tokens: axis labels.
        allowed: optional bool ``[query, key]`` mask shared by all heads.
        cols: heads per row.
        title: the figure's title.
        max_side: longest axis drawn cell by cell in each small heatmap; longer are pooled.
        zmax: the weight drawn darkest.
        query_hover: what hovering a row says of its query (see :func:`attention_heatmap`).
        highlight: ``(head, query, key)``: a cell outlined in that head's heatmap.
        factors: ``layer_weights`` are already pooled (see :func:`attention_heatmap`).
        titles: each panel's title (default ``head h``): the grid may show one head at
            several training stages instead.

    Returns:
        a figure with one weight trace per head (in head order, subplot titles ``head h``),
        plus a mask trace after each where cells are masked.
    """
    layer_weights = _check_pooled(layer_weights, query_tokens, key_tokens, factors, ndim=3)
    shape = (len(query_tokens), len(key_tokens))
    allowed = _check_allowed(allowed, shape)
    outline = None
    if highlight is not None:
        head, *cell = (int(i) for i in highlight)
        if not 0 <= head < layer_weights.shape[0]:
            raise ValueError(f"head {head} is outside the {layer_weights.shape[0]} heads")
        cell = _check_highlight(cell, *shape)
        outline = (head, _outline(*cell, *shape, max_side, factors))
    layer_weights, allowed, query_tokens, key_tokens, note = _pooled(
        layer_weights, allowed, query_tokens, key_tokens, max_side, factors)
    if note:
        title = f"{title}<br><sup>{note}</sup>" if title else f"<sup>{note}</sup>"
        query_hover = None
    n_heads, n_q, n_k = layer_weights.shape
    cols = max(1, min(cols, n_heads))
    rows = math.ceil(n_heads / cols)
    height = 80 + rows * 260
    # Small multiples: the keys are labelled under the lowest heatmap of each column and the
    # queries left of the first column, so that only panel titles sit between rows.
    lowest = {h % cols: h for h in range(n_heads)}  # each column's lowest heatmap
    fig = make_subplots(rows=rows, cols=cols,
                        subplot_titles=list(titles) if titles is not None
                        else [head_name(h) for h in range(n_heads)],
                        horizontal_spacing=0.03,
                        vertical_spacing=min(0.3, 40 / height) if rows > 1 else 0.1)
    customdata = _cell_names(query_tokens, key_tokens, query_hover, heads=n_heads)
    x_labels = axis_ticks(key_tokens, n_k)
    y_labels = axis_ticks(query_tokens, n_q)
    for h in range(n_heads):
        row, col = divmod(h, cols)
        for trace in _head_traces(layer_weights[h], allowed, customdata, pooled=bool(note)):
            fig.add_trace(trace, row=row + 1, col=col + 1)
        x_ticks = x_labels if lowest[col] == h else {"showticklabels": False}
        y_ticks = y_labels if col == 0 else {"showticklabels": False, "ticks": ""}
        fig.update_xaxes(tickfont=SMALL_TICK_FONT, showgrid=False, zeroline=False,
                         row=row + 1, col=col + 1, **x_ticks)
        fig.update_yaxes(autorange="reversed", tickfont=SMALL_TICK_FONT, showgrid=False,
                         zeroline=False, row=row + 1, col=col + 1, **y_ticks)
        if outline is not None and outline[0] == h:
            fig.add_shape(**outline[1], row=row + 1, col=col + 1)
    fig.update_layout(
        title=title, coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": zmax,
                                "colorbar": {"title": {"text": _("weight")}}},
        height=height,
        margin={"l": 50, "r": 30, "t": 70, "b": 40})
    fit_ticks(fig, SCREEN_CHART_PX)
    return themed(fig)
