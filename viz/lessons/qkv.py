"""Figures of the lesson §4.2: one token's query against every key (vectors as strips, a
head's projection, the scores and weights).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import _
from viz.labels import axis_ticks, escape
from viz.lessons.layout import symmetric
from viz.style import (
    BAR_COLOR,
    DIVERGING_SCALE,
    GRID_COLOR,
    HIGHLIGHT_COLOR,
    MASK_COLOR,
    themed,
)


def vector_strips(rows: Sequence[tuple[str, np.ndarray]], *, title: str = "",
                  x_title: str | None = None) -> go.Figure:
    """Vectors of one length as stripes of colour, one row each (red-blue, 0 white).

    Args:
        rows: ``(label, vector [d])`` pairs, drawn top to bottom.
        title: the figure's title.
        x_title: the x axis's title (default "dimension").

    Returns:
        a figure with one ``go.Heatmap`` ``[row, dimension]``.
    """
    if not rows:
        raise ValueError("no vectors to draw")
    z = np.stack([np.asarray(v, dtype=float) for _label, v in rows])
    labels = [label for label, _v in rows]
    zmax = symmetric(z)
    fig = go.Figure(go.Heatmap(
        z=z, zmin=-zmax, zmax=zmax, colorscale=DIVERGING_SCALE, reversescale=True,
        customdata=np.repeat(np.array(labels, dtype=object)[:, None], z.shape[1], axis=1),
        colorbar={"title": {"text": _("value")}, "len": 0.9},
        hovertemplate=_("%{customdata}<br>dimension %{x}: %{z:.3f}") + "<extra></extra>"))
    fig.update_layout(title=title, height=110 + 44 * len(rows),
                      margin={"l": 20, "r": 20, "t": 50 if title else 20, "b": 45})
    fig.update_xaxes(title_text=_("dimension") if x_title is None else x_title, showgrid=False,
                     zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(rows))), ticktext=labels,
                     autorange="reversed", showgrid=False, zeroline=False, automargin=True)
    return themed(fig)


def projection(x, weight, bias, result, *, letter: str, title: str = "") -> go.Figure:
    """``x · Wᵀ + b = result`` for one head's slice of a projection, as aligned matrices: x on
    top of W's columns, b and the result beside W's rows (row i of W times x, plus b_i, gives
    result_i).

    Args:
        x: ``[d_model]`` the input vector.
        weight: ``[d_head, d_model]`` the head's rows of W_Q, W_K or W_V.
        bias: ``[d_head]`` and ``result``: ``[d_head]`` (q, k or v).
        letter: ``Q``, ``K`` or ``V``.
        title: the figure's title.

    Returns:
        a figure of four heatmaps on one red-blue scale each (x, W, b, result).
    """
    x, weight = np.asarray(x, dtype=float), np.asarray(weight, dtype=float)
    bias, result = np.asarray(bias, dtype=float), np.asarray(result, dtype=float)
    d_head, d_model = weight.shape
    if x.shape != (d_model,) or bias.shape != (d_head,) or result.shape != (d_head,):
        raise ValueError(f"shapes x {x.shape}, W {weight.shape}, b {bias.shape}, "
                         f"result {result.shape} do not fit")
    small = letter.lower()
    fig = make_subplots(rows=2, cols=3, column_widths=[0.86, 0.07, 0.07],
                        row_heights=[0.1, 0.9], horizontal_spacing=0.015, vertical_spacing=0.03,
                        subplot_titles=["x", "", "", "", "b",
                                        f"{small} = x·W<sub>{letter}</sub>ᵀ + b"])
    hover = _("%{y}, %{x}: %{z:.3f}") + "<extra></extra>"
    for z, row, col, name in ((x[None, :], 1, 1, "x"), (weight, 2, 1, f"W_{letter}"),
                              (bias[:, None], 2, 2, "b"), (result[:, None], 2, 3, small)):
        zmax = symmetric(z)
        fig.add_trace(go.Heatmap(z=z, zmin=-zmax, zmax=zmax, colorscale=DIVERGING_SCALE,
                                 reversescale=True, showscale=False, name=name,
                                 hovertemplate=hover), row=row, col=col)
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False, autorange="reversed")
    fig.update_xaxes(showticklabels=False, row=1, col=1)
    fig.update_yaxes(showticklabels=False, row=1, col=1)
    fig.update_xaxes(title_text=_("input dimension (d_model = {d})").format(d=d_model), row=2,
                     col=1)
    fig.update_yaxes(title_text=_("rows of W<sub>{letter}</sub> (d_head = {d})").format(
        letter=letter, d=d_head), row=2, col=1)
    for col in (2, 3):
        fig.update_xaxes(showticklabels=False, row=2, col=col)
        fig.update_yaxes(showticklabels=False, row=2, col=col)
    fig.update_layout(title=title, height=min(760, 240 + 9 * d_head),
                      margin={"l": 70, "r": 20, "t": 80 if title else 50, "b": 50})
    return themed(fig)


def query_key_bars(keys: Sequence[str], scaled, weights, allowed, *, d_head: int,
                   title: str = "") -> go.Figure:
    """One query against every key: ``q · k ÷ √d_head`` (left) and the weight after the mask
    and softmax (right), a bar per key, the numbers written on the bars.

    Args:
        keys: the key tokens.
        scaled: ``[key]`` scaled dot products; ``weights``: ``[key]`` attention weights.
        allowed: bool ``[key]``: masked keys are drawn grey (their score becomes −∞).
        d_head: the head's width (for the axis title).
        title: the figure's title.

    Returns:
        a figure with two ``go.Bar`` traces (named "scores" and "weights").
    """
    scaled, weights = np.asarray(scaled, dtype=float), np.asarray(weights, dtype=float)
    allowed = np.asarray(allowed, dtype=bool)
    n = len(keys)
    if scaled.shape != (n,) or weights.shape != (n,) or allowed.shape != (n,):
        raise ValueError(f"{scaled.shape} scores, {weights.shape} weights, {allowed.shape} "
                         f"mask for {n} keys")
    labels = escape(keys)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[_("q · k ÷ √{d_head}").format(d_head=d_head),
                                        _("weight after softmax")])
    masked = _("masked: −∞ before softmax")
    score_text = [f"{v:.2f}" if ok else f"{v:.2f} ✗" for v, ok in zip(scaled, allowed)]
    fig.add_trace(go.Bar(
        x=scaled, y=list(range(n)), orientation="h", name="scores",
        marker_color=[BAR_COLOR if ok else MASK_COLOR for ok in allowed],
        text=score_text, textposition="outside", cliponaxis=False,
        customdata=[[label, "" if ok else masked] for label, ok in zip(labels, allowed)],
        hovertemplate=_("key %{customdata[0]}<br>q·k ÷ √d_head = %{x:.4f}") + "<br>"
        + "%{customdata[1]}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(
        x=weights, y=list(range(n)), orientation="h", name="weights",
        marker_color=[HIGHLIGHT_COLOR if ok else MASK_COLOR for ok in allowed],
        text=[f"{v:.2f}" for v in weights], textposition="outside", cliponaxis=False,
        customdata=labels,
        hovertemplate=_("key %{customdata}<br>weight %{x:.4f}") + "<extra></extra>"),
        row=1, col=2)
    spread = symmetric(scaled)
    low = min(0.0, float(np.min(scaled)))
    fig.update_xaxes(range=[low - 0.25 * spread, max(0.0, float(np.max(scaled)))
                            + 0.3 * spread], gridcolor=GRID_COLOR, zeroline=True, row=1, col=1)
    fig.update_xaxes(range=[0, 1.2], gridcolor=GRID_COLOR, row=1, col=2)
    fig.update_yaxes(autorange="reversed", **axis_ticks(keys), row=1, col=1)
    fig.update_layout(title=title, showlegend=False, height=max(260, 110 + 34 * n),
                      margin={"l": 90, "r": 30, "t": 80 if title else 50, "b": 30}, bargap=0.25)
    return themed(fig)
