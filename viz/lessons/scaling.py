"""Figures of the lesson §4.4, why the scores are divided by √d_k: the spread of q·k,
softmax saturation, the gradient, a real head's scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import _
from viz.labels import axis_ticks, escape
from viz.style import (
    BAR_COLOR,
    GRID_COLOR,
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    POINT_MARKER_SIZE,
    WEIGHT_SCALE,
    themed,
)


def _density_bars(fig, values, row: int, col: int, color: str, name: str) -> None:
    counts, edges = np.histogram(values, bins=40, density=True)
    centres = (edges[:-1] + edges[1:]) / 2
    fig.add_trace(go.Bar(x=centres, y=counts, width=np.diff(edges), marker_color=color,
                         opacity=0.8, name=name, showlegend=False,
                         hovertemplate="%{x:.2f}<br>" + _("density") + " %{y:.4f}"
                                       "<extra></extra>"), row=row, col=col)


def _normal_curve(fig, sigma: float, row: int, col: int, name: str) -> None:
    x = np.linspace(-4 * sigma, 4 * sigma, 161)
    y = np.exp(-0.5 * (x / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"color": GUIDE_COLOR, "dash": "dot"},
                             name=name, showlegend=False, hoverinfo="skip"), row=row, col=col)


def dot_product_spread(products, d_k: int) -> go.Figure:
    """Histograms of q·k for random unit-variance vectors (left) and of q·k/√d_k (right), each
    with the normal curve of spread √d_k and 1, and a bracket at ±1 spread.

    Args:
        products: ``[n]`` dot products q·k of width ``d_k``.
    """
    products = np.asarray(products, dtype=float)
    root = float(np.sqrt(d_k))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        _("q·k: spread {measured:.2f} (√d_k = {root:.2f})").format(
            measured=products.std(), root=root),
        _("q·k / √d_k: spread {measured:.2f}").format(measured=(products / root).std())))
    _density_bars(fig, products, 1, 1, BAR_COLOR, _("q·k"))
    _normal_curve(fig, root, 1, 1, _("normal curve"))
    _density_bars(fig, products / root, 1, 2, HIGHLIGHT_COLOR, _("q·k / √d_k"))
    _normal_curve(fig, 1.0, 1, 2, _("normal curve"))
    for col, sigma in ((1, root), (2, 1.0)):
        for sign in (-1, 1):
            fig.add_vline(x=sign * sigma, line_dash="dash", line_color=GUIDE_COLOR, row=1,
                          col=col)
    fig.update_layout(title=_("{n:,} random pairs q, k with d_k = {d_k}").format(
        n=products.size, d_k=d_k), height=360, bargap=0,
        margin={"l": 60, "r": 20, "t": 90, "b": 50})
    fig.update_xaxes(title_text=_("q·k"), gridcolor=GRID_COLOR, row=1, col=1)
    fig.update_xaxes(title_text=_("q·k / √d_k"), gridcolor=GRID_COLOR, row=1, col=2)
    fig.update_xaxes(range=[-4.5 * root, 4.5 * root], row=1, col=1)
    fig.update_xaxes(range=[-4.5, 4.5], row=1, col=2)
    fig.update_yaxes(title_text=_("density"), gridcolor=GRID_COLOR, row=1, col=1)
    fig.update_yaxes(gridcolor=GRID_COLOR, row=1, col=2)
    return themed(fig)


def spread_by_width(widths: Sequence[int], measured, current: int | None = None) -> go.Figure:
    """The measured spread of q·k over d_k (dots) against √d_k (a line), and after ÷√d_k
    (flat at 1), on log axes.

    Args:
        widths: the d_k measured.
        measured: ``[len(widths)]`` standard deviations of q·k.
        current: a d_k to mark.
    """
    widths = np.asarray(widths, dtype=float)
    measured = np.asarray(measured, dtype=float)
    fig = go.Figure([
        go.Scatter(x=widths, y=np.sqrt(widths), mode="lines", name="√d_k",
                   line={"color": GUIDE_COLOR, "dash": "dot"},
                   hovertemplate="d_k = %{x}<br>√d_k = %{y:.2f}<extra></extra>"),
        go.Scatter(x=widths, y=measured, mode="markers+lines", name=_("spread of q·k"),
                   marker={"size": POINT_MARKER_SIZE + 2, "color": BAR_COLOR},
                   line={"color": BAR_COLOR},
                   hovertemplate="d_k = %{x}<br>" + _("spread") + " %{y:.2f}<extra></extra>"),
        go.Scatter(x=widths, y=measured / np.sqrt(widths), mode="markers+lines",
                   name=_("spread of q·k / √d_k"),
                   marker={"size": POINT_MARKER_SIZE + 2, "color": HIGHLIGHT_COLOR},
                   line={"color": HIGHLIGHT_COLOR},
                   hovertemplate="d_k = %{x}<br>" + _("spread") + " %{y:.2f}<extra></extra>"),
    ])
    if current is not None:
        fig.add_vline(x=current, line_dash="dash", line_color=GUIDE_COLOR)
    fig.update_layout(title=_("The spread grows like √d_k; dividing brings it back to 1"),
                      height=360, margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(type="log", title_text="d_k", gridcolor=GRID_COLOR, tickmode="array",
                     tickvals=list(widths[::2]), ticktext=[f"{w:g}" for w in widths[::2]],
                     automargin=True)
    ticks = [2.0 ** k for k in range(-1, 7)]  # 0.5 … 32: one label per doubling
    fig.update_yaxes(type="log", title_text=_("standard deviation"), gridcolor=GRID_COLOR,
                     tickmode="array", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return themed(fig)


def softmax_pair(raw, scaled, labels: Sequence[str], divisor: float) -> go.Figure:
    """Softmax of some scores as they are and divided by √d_k, as grouped bars.

    Args:
        raw: ``[n]`` softmax(scores).
        scaled: ``[n]`` softmax(scores / √d_k).
        labels: ``n`` names of the scores (e.g. "8", "−3").
        divisor: √d_k, for the legend.
    """
    x = list(range(len(labels)))
    fig = go.Figure([
        go.Bar(x=x, y=np.asarray(raw, dtype=float), name=_("softmax(s)"),
               marker_color=BAR_COLOR, text=[f"{v:.3f}" for v in raw],
               textposition="outside", cliponaxis=False,
               hovertemplate=_("without scaling") + " %{y:.6f}<extra></extra>"),
        go.Bar(x=x, y=np.asarray(scaled, dtype=float),
               name=_("softmax(s / {divisor:.2f})").format(divisor=divisor),
               marker_color=HIGHLIGHT_COLOR, text=[f"{v:.3f}" for v in scaled],
               textposition="outside", cliponaxis=False,
               hovertemplate=_("with ÷√d_k") + " %{y:.6f}<extra></extra>"),
    ])
    fig.update_layout(title=_("Softmax without and with ÷√d_k"), barmode="group", height=340,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      legend={"orientation": "h", "y": -0.2})
    fig.update_xaxes(tickmode="array", tickvals=x,
                     ticktext=[_("score {label}").format(label=label) for label in labels])
    fig.update_yaxes(range=[0, 1.15], title_text=_("weight"), gridcolor=GRID_COLOR)
    return themed(fig)


def gradient_by_width(widths: Sequence[int], without, with_, current: int | None = None
                      ) -> go.Figure:
    """The mean size of softmax's gradient over d_k, without and with ÷√d_k (log axes)."""
    widths = np.asarray(widths, dtype=float)
    fig = go.Figure([
        go.Scatter(x=widths, y=np.asarray(without, dtype=float), mode="markers+lines",
                   name=_("without ÷√d_k"), marker={"color": BAR_COLOR},
                   line={"color": BAR_COLOR},
                   hovertemplate="d_k = %{x}<br>%{y:.4f}<extra></extra>"),
        go.Scatter(x=widths, y=np.asarray(with_, dtype=float), mode="markers+lines",
                   name=_("with ÷√d_k"), marker={"color": HIGHLIGHT_COLOR},
                   line={"color": HIGHLIGHT_COLOR},
                   hovertemplate="d_k = %{x}<br>%{y:.4f}<extra></extra>"),
    ])
    if current is not None:
        fig.add_vline(x=current, line_dash="dash", line_color=GUIDE_COLOR)
    fig.update_layout(title=_("Size of softmax's gradient, 8 keys per row"), height=340,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      legend={"orientation": "h", "y": -0.25})
    fig.update_xaxes(type="log", title_text="d_k", gridcolor=GRID_COLOR, tickmode="array",
                     tickvals=list(widths[::2]), ticktext=[f"{w:g}" for w in widths[::2]],
                     automargin=True)
    ticks = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]
    fig.update_yaxes(type="log", title_text=_("gradient size"), gridcolor=GRID_COLOR,
                     tickmode="array", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return themed(fig)


def scaling_heatmaps(raw_weights, weights, query_tokens: Sequence[str],
                     key_tokens: Sequence[str], sqrt_dk: float, title: str = "") -> go.Figure:
    """One head's weights as softmax of its scores without ÷√d_k (left) and as the model
    computes them (right), on one colour scale from 0 to 1.

    Args:
        raw_weights, weights: ``[query, key]``.
        title: the figure's title (e.g. the kind, layer and head).
    """
    raw_weights = np.asarray(raw_weights, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if raw_weights.shape != weights.shape or weights.shape != (len(query_tokens),
                                                              len(key_tokens)):
        raise ValueError(f"weights {raw_weights.shape}, {weights.shape} do not match "
                         f"{len(query_tokens)} × {len(key_tokens)} tokens")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        _("without ÷√d_k"), _("÷{root:.2f} (the model)").format(root=sqrt_dk)))
    hover = (_("query") + " %{customdata[0]}<br>" + _("key") + " %{customdata[1]}<br>"
             + _("weight") + " %{z:.4f}<extra></extra>")
    # [query, key, 2]: the two tokens of each cell, for its hover
    cells = np.array([[(q, k) for k in escape(key_tokens)] for q in escape(query_tokens)],
                     dtype=object)
    for col, z in ((1, raw_weights), (2, weights)):
        # integer positions, so that two "the" stay two rows
        fig.add_trace(go.Heatmap(z=z, x=list(range(len(key_tokens))),
                                 y=list(range(len(query_tokens))), customdata=cells,
                                 coloraxis="coloraxis", hovertemplate=hover), row=1, col=col)
        fig.update_xaxes(**axis_ticks(key_tokens), title_text=_("key"), row=1, col=col)
        fig.update_yaxes(**axis_ticks(query_tokens), autorange="reversed", row=1, col=col)
    fig.update_yaxes(title_text=_("query"), row=1, col=1)
    fig.update_layout(coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                                 "colorbar": {"title": {"text": _("weight")}}},
                      title=title, height=400, margin={"l": 70, "r": 20, "t": 90, "b": 60})
    return themed(fig)
