"""Figures of the lesson §4.3, attention by hand: the weights and the weighted average of V.
Numbers are written with :mod:`.numbers`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import axis_ticks, escape
from viz.numbers import number
from viz.style import (
    BAR_COLOR,
    GRID_COLOR,
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    themed,
)


def hand_weights(words: Sequence[str], weights, decimals: int = 2) -> go.Figure:
    """The attention weights of §4.3's query, one bar per word, each written on its bar.

    Args:
        words: ``n`` labels.
        weights: ``[n]`` weights summing to 1.
        decimals: the places written on the bars.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (len(words),):
        raise ValueError(f"{weights.shape} weights do not match {len(words)} words")
    fig = go.Figure(go.Bar(
        x=list(range(len(words))), y=weights, marker_color=BAR_COLOR,
        text=[number(w, decimals) for w in weights], textposition="outside", cliponaxis=False,
        customdata=escape(words),
        hovertemplate="%{customdata}<br>" + _("weight") + " %{y:.4f}<extra></extra>"))
    fig.update_layout(title=_("Attention weights of the query"), height=320,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, bargap=0.35)
    fig.update_xaxes(**axis_ticks(words))
    fig.update_yaxes(range=[0, max(1.0, float(np.nanmax(weights, initial=0)) * 1.15)],
                     title_text=_("weight"), gridcolor=GRID_COLOR)
    return themed(fig)


def value_mix(words: Sequence[str], values, weights, output) -> go.Figure:
    """§4.3's output as a point among the rows of V: each row a dot as large as its weight,
    the output a star where their weighted average lies.

    Args:
        words: ``n`` labels.
        values: ``[n, 2]`` the rows of V (two columns: the plane of the figure).
        weights: ``[n]`` their weights.
        output: ``[2]`` the weighted sum.
    """
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    output = np.asarray(output, dtype=float)
    if values.shape != (len(words), 2) or weights.shape != (len(words),) or output.shape != (2,):
        raise ValueError(f"values {values.shape}, weights {weights.shape} and output "
                         f"{output.shape} do not fit {len(words)} words in a plane")
    labels = escape(words)
    fig = go.Figure()
    for (x, y), weight in zip(values, weights):  # a thin line from each row to the output
        fig.add_trace(go.Scatter(x=[x, output[0]], y=[y, output[1]], mode="lines",
                                 line={"color": GUIDE_COLOR, "width": 1 + 4 * weight},
                                 hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=values[:, 0], y=values[:, 1], mode="markers+text", name=_("rows of V"),
        text=[f"{label} ({weight:.2f})" for label, weight in zip(labels, weights)],
        textposition="top center", customdata=weights,
        marker={"size": 10 + 40 * np.clip(weights, 0, 1), "color": BAR_COLOR,
                "line": {"width": 1, "color": "white"}},
        hovertemplate="%{text}<br>v = (%{x}, %{y})<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=[output[0]], y=[output[1]], mode="markers+text", name=_("output"),
        text=[_("output")], textposition="bottom center",
        marker={"size": 18, "symbol": "star", "color": HIGHLIGHT_COLOR},
        hovertemplate=_("output") + " (%{x:.4f}, %{y:.4f})<extra></extra>"))
    points = np.vstack([values, output[None]])
    low, high = points.min(axis=0), points.max(axis=0)
    pad = np.maximum((high - low) * 0.25, 0.5)
    fig.update_layout(title=_("The output is a weighted average of the rows of V"), height=380,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, showlegend=False)
    fig.update_xaxes(range=[low[0] - pad[0], high[0] + pad[0]], title_text="v₁",
                     gridcolor=GRID_COLOR, zeroline=False)
    fig.update_yaxes(range=[low[1] - pad[1], high[1] + pad[1]], title_text="v₂",
                     gridcolor=GRID_COLOR, zeroline=False, scaleanchor="x", scaleratio=1)
    return themed(fig)
