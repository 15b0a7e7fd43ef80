"""Seed 4.8: self-attention's n²·d against a recurrent layer's n·d² as the length n grows."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.numbers import decade_ticks
from viz.style import (
    ATTENTION_CURVE_COLOR,
    CURRENT_COLOR,
    GRID_COLOR,
    RNN_CURVE_COLOR,
    themed,
)


def complexity_curves(d_model: int, n_current: int, n_max: int | None = None) -> go.Figure:
    """Operations per layer, n²·d (self-attention) and n·d² (RNN), over n on log axes.

    Args:
        d_model: the width d.
        n_current: this run's length, marked on the plot.
        n_max: the longest n drawn (default: 8·max(d, n_current)).

    Returns:
        a figure with the two curves (``name`` "self-attention n²·d", "RNN n·d²"), the
        current length and the crossover n = d.
    """
    if d_model < 1 or n_current < 1:
        raise ValueError("d_model and n_current must be positive")
    n_max = n_max or 8 * max(d_model, n_current)
    n = np.unique(np.geomspace(1, n_max, 200).astype(int))
    fig = go.Figure([
        go.Scatter(x=n, y=n.astype(float) ** 2 * d_model, name=_("self-attention n²·d"),
                   line={"color": ATTENTION_CURVE_COLOR}),
        go.Scatter(x=n, y=n * float(d_model) ** 2, name=_("RNN n·d²"),
                   line={"color": RNN_CURVE_COLOR}),
    ])
    # Lines at n = d and at this input's n. On a log axis a line (a shape) is placed at its
    # value but an annotation at the value's log10: written at the value, "n = d = 128" once
    # stretched the axis to 10¹²⁸.
    fig.add_vline(x=d_model, line_dash="dot")
    fig.add_vline(x=n_current, line_color=CURRENT_COLOR)
    fig.add_annotation(x=np.log10(d_model), y=1, xref="x", yref="paper", showarrow=False,
                       text=f"n = d = {d_model}", xanchor="right", yanchor="top")
    fig.add_annotation(x=np.log10(n_current), y=0, xref="x", yref="paper", showarrow=False,
                       text=_("this input: n = {n}").format(n=n_current), xanchor="left",
                       yanchor="bottom")
    fig.update_layout(title=_("Operations per layer at d = {d}: attention is cheaper while "
                              "n < d").format(d=d_model), height=400,
                      margin={"l": 70, "r": 20, "t": 60, "b": 50},
                      legend={"orientation": "h", "y": -0.2})
    # ticks written in the page's units (Plotly's own, 10k and 1B, are English); hovers in full
    ops = np.concatenate([fig.data[0].y, fig.data[1].y])
    fig.update_xaxes(type="log", title_text=_("sequence length n"), gridcolor=GRID_COLOR,
                     hoverformat=",.0f", **decade_ticks(n[0], n[-1]))
    fig.update_yaxes(type="log", title_text=_("operations"), gridcolor=GRID_COLOR,
                     hoverformat=",.0f", **decade_ticks(ops.min(), ops.max()))
    return themed(fig)
