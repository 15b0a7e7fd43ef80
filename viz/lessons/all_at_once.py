"""Figures of the lesson §4.5, every word at once: the weights of every word as one matrix
(the row §4.3 computed outlined), and the loop over rows timed against one matrix product.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import axis_ticks, escape
from viz.lessons.layout import EXTRA, query_key_hover
from viz.numbers import decade_ticks, number
from viz.style import (
    ATTENTION_CURVE_COLOR,
    CELL_FONT_SIZE,
    GRID_COLOR,
    HIGHLIGHT_COLOR,
    RNN_CURVE_COLOR,
    WEIGHT_SCALE,
    themed,
)


def weight_matrix(words: Sequence[str], weights, *, row: int | None = None,
                  decimals: int = 2, title: str = "") -> go.Figure:
    """Every word's weights as one ``n × n`` matrix, each weight written in its cell, one row
    outlined.

    Args:
        words: ``n`` labels (rows: the word looking; columns: the word looked at).
        weights: ``[n, n]`` rows summing to 1.
        row: the row outlined (§4.3's 它), or None.
        decimals: the places written in the cells.
        title: the figure's title.

    Returns:
        a figure whose one trace is the heatmap; the outlined row is the layout's one shape.
    """
    weights = np.asarray(weights, dtype=float)
    n = len(words)
    if weights.shape != (n, n):
        raise ValueError(f"{weights.shape} weights do not match {n} words")
    labels = escape(words)
    cells = [[[labels[i], labels[j]] for j in range(n)] for i in range(n)]
    fig = go.Figure(go.Heatmap(
        z=weights, x=list(range(n)), y=list(range(n)), zmin=0, zmax=1,
        colorscale=WEIGHT_SCALE, customdata=cells,
        text=[[number(w, decimals) for w in line] for line in weights],
        texttemplate="%{text}", textfont={"size": CELL_FONT_SIZE + 4},
        colorbar={"title": {"text": _("weight")}},
        hovertemplate=query_key_hover() + _("weight") + " %{z:.4f}" + EXTRA))
    if row is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=n - 0.5, y0=row - 0.5, y1=row + 0.5,
                      line={"color": HIGHLIGHT_COLOR, "width": 4}, name="row")
    fig.update_layout(title=title, height=420, margin={"l": 70, "r": 20, "t": 60, "b": 60})
    fig.update_xaxes(**axis_ticks(words), title_text=_("key (attended to)"), side="bottom")
    fig.update_yaxes(**axis_ticks(words), title_text=_("query (attending)"),
                     autorange="reversed", scaleanchor="x", scaleratio=1)
    return themed(fig)


def timing_chart(rows: Sequence[int], loop, product, *, device: str) -> go.Figure:
    """Seconds of the loop over rows and of the one matrix product, against the number of rows,
    both axes logarithmic.

    Args:
        rows: the numbers of rows timed.
        loop, product: ``[len(rows)]`` median seconds of each way.
        device: where they ran (named in the title).

    Returns:
        a figure of two line traces, the loop first; their ``customdata``: the speed-up.
    """
    loop = np.asarray(loop, dtype=float)
    product = np.asarray(product, dtype=float)
    if loop.shape != (len(rows),) or product.shape != (len(rows),):
        raise ValueError(f"{loop.shape} and {product.shape} times for {len(rows)} lengths")
    speedup = loop / product
    fig = go.Figure()
    for name, seconds, color, symbol in (
            (_("a loop: one row at a time"), loop, RNN_CURVE_COLOR, "circle"),
            (_("one matrix product"), product, ATTENTION_CURVE_COLOR, "diamond")):
        fig.add_trace(go.Scatter(
            x=list(rows), y=seconds * 1e3, mode="lines+markers", name=name,
            line={"color": color, "width": 3}, marker={"size": 10, "symbol": symbol},
            customdata=speedup,
            hovertemplate=name + "<br>" + _("{rows} rows: {ms} ms").format(
                rows="%{x:,}", ms="%{y:.3g}") + "<br>" + _("product {times}× faster").format(
                times="%{customdata:.3g}") + EXTRA))
    low = float(min(loop.min(initial=1.0), product.min(initial=1.0))) * 1e3
    high = float(max(loop.max(initial=1e-3), product.max(initial=1e-3))) * 1e3
    fig.update_layout(title=_("Every row: a loop against one product ({device})").format(
        device=device), height=440, margin={"l": 70, "r": 20, "t": 60, "b": 60},
        legend={"orientation": "h", "y": -0.22})
    fig.update_xaxes(type="log", title_text=_("rows n (queries = keys)"), gridcolor=GRID_COLOR,
                     tickvals=list(rows), ticktext=[f"{n:,}" for n in rows])
    fig.update_yaxes(type="log", title_text=_("milliseconds (median)"), gridcolor=GRID_COLOR,
                     **decade_ticks(low, high))
    return themed(fig)
