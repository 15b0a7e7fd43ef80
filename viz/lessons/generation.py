"""Figures of the lesson §3.4 step 3 and §3.8, generation and the KV cache: the growing
causal pattern, the cache's grid and its bytes step by step.

Pure builders (numpy and plotly): the numbers come from :mod:`model.lessons.generation`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.heatmap import _hover_data
from viz.labels import axis_ticks, check_weights, escape, labels_that_fit
from viz.lessons.layout import EXTRA, NARROW_PX, query_key_hover, slant
from viz.numbers import linear_ticks
from viz.style import (
    ATTENTION_CURVE_COLOR,
    BAR_COLOR,
    GRID_COLOR,
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    MASK_COLOR,
    RNN_CURVE_COLOR,
    WEIGHT_SCALE,
    head_color,
    themed,
)

LATER_COLOR = "rgba(128,128,128,0.10)"  # rows a later step computes


def growing_pattern(weights, allowed, row_labels: Sequence[str], key_labels: Sequence[str], *,
                    first_new: int, rows: int, row_hover: Sequence[str] | None = None,
                    title: str = "", y_title: str | None = None) -> go.Figure:
    """Causal self-attention as it stands after one generation step: the rows computed so far
    in blue, the rows this step added outlined, the masked cells grey and the rows of later
    steps faint.

    Args:
        weights: ``[token, token]`` weights; NaN in rows not computed yet.
        allowed: bool ``[token, token]`` causal mask.
        row_labels, key_labels: the axes' labels.
        first_new, rows: this step added rows ``first_new .. rows - 1``.
        row_hover: what hovering a row says of its query (default ``"i: token"``).
        title: the figure's title.
        y_title: the rows' axis title (default "query (attending)").

    Returns:
        a figure whose traces are the weights, the masked cells and the later rows, with one
        rectangle shape around the new rows.
    """
    weights = check_weights(weights, row_labels, key_labels)
    allowed = np.asarray(allowed, dtype=bool)
    n_q, n_k = weights.shape
    if allowed.shape != weights.shape:
        raise ValueError(f"mask of shape {allowed.shape} does not match weights {weights.shape}")
    if not 0 <= first_new < rows <= n_q:
        raise ValueError(f"new rows {first_new}..{rows - 1} are outside 0..{n_q - 1}")
    custom = _hover_data(row_labels, key_labels, row_hover)
    done = np.broadcast_to(np.arange(n_q)[:, None] < rows, (n_q, n_k))  # [query, key]
    hover = query_key_hover()
    fig = go.Figure([
        go.Heatmap(z=np.where(done & allowed, weights, np.nan), customdata=custom,
                   coloraxis="coloraxis", hoverongaps=False, name="weights",
                   hovertemplate=hover + _("weight %{z:.4f}") + EXTRA),
        go.Heatmap(z=np.where(done & ~allowed, 1.0, np.nan), customdata=custom,
                   showscale=False, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
                   hoverongaps=False, name="masked",
                   hovertemplate=hover + _("masked (−∞ before softmax)") + EXTRA),
        go.Heatmap(z=np.where(done, np.nan, 1.0), customdata=custom, showscale=False,
                   colorscale=[[0, LATER_COLOR], [1, LATER_COLOR]], hoverongaps=False,
                   name="later", hovertemplate=hover + _("computed by a later step") + EXTRA),
    ])
    fig.add_shape(type="rect", x0=-0.5, x1=n_k - 0.5, y0=first_new - 0.5, y1=rows - 0.5,
                  line={"color": HIGHLIGHT_COLOR, "width": 3}, fillcolor="rgba(0,0,0,0)")
    cell = max(8, min(40, 480 // max(n_q, n_k)))
    fig.update_layout(
        title=title, height=max(340, 170 + cell * n_q),
        coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                   "colorbar": {"title": {"text": _("weight")}, "thickness": 12}},
        margin={"l": 90, "r": 10, "t": 60 if title else 30, "b": 90})
    fig.update_xaxes(title_text=_("key: the tokens in the cache"), tickangle=slant(key_labels),
                     showgrid=False, zeroline=False,
                     **axis_ticks(key_labels, labels_that_fit(NARROW_PX)))
    fig.update_yaxes(title_text=y_title or _("query (attending)"), autorange="reversed",
                     showgrid=False, zeroline=False,
                     **axis_ticks(row_labels, labels_that_fit(cell * n_q)))
    return themed(fig)


def cache_grid(n_layers: int, token_labels: Sequence[str], *, before: int, now: int,
               bytes_per_cell: int, title: str = "") -> go.Figure:
    """The KV cache of every layer as a grid (layer × cached token): the keys and values held
    before this step, those the step added, and the room of later steps.

    Args:
        n_layers: decoder layers.
        token_labels: every token the cache holds at the end (x axis).
        before, now: tokens cached before and after this step.
        bytes_per_cell: bytes of one token's keys and values in one layer.
        title: the figure's title.

    Returns:
        a figure with two heatmaps ("cached", "added") over ``[layer, token]``.
    """
    n = len(token_labels)
    if n_layers < 1 or not 0 <= before < now <= n:
        raise ValueError(f"{before}..{now} cached of {n} tokens, {n_layers} layers")
    position = np.arange(n)[None, :].repeat(n_layers, axis=0)  # [layer, token]
    labels = escape(token_labels)
    custom = np.empty((n_layers, n, 2), dtype=object)
    custom[..., 0] = np.arange(n_layers)[:, None]
    custom[..., 1] = np.array([f"{i}: {t}" for i, t in enumerate(labels)], dtype=object)[None]
    hover = (_("layer %{customdata[0]} · token %{customdata[1]}") + "<br>"
             + _("K and V: {count:,} bytes").format(count=bytes_per_cell))
    fig = go.Figure([
        go.Heatmap(z=np.where(position < before, 1.0, np.nan), customdata=custom,
                   colorscale=[[0, BAR_COLOR], [1, BAR_COLOR]], showscale=False,
                   hoverongaps=False, xgap=1, ygap=1, name=_("cached before this step"),
                   hovertemplate=hover + "<br>" + _("cached before this step") + EXTRA),
        go.Heatmap(z=np.where((position >= before) & (position < now), 1.0, np.nan),
                   customdata=custom, colorscale=[[0, HIGHLIGHT_COLOR], [1, HIGHLIGHT_COLOR]],
                   showscale=False, hoverongaps=False, xgap=1, ygap=1,
                   name=_("added by this step"),
                   hovertemplate=hover + "<br>" + _("added by this step") + EXTRA),
    ])
    # Legend entries for the two colours (heatmaps have none).
    for name, color in ((_("cached before this step"), BAR_COLOR),
                        (_("added by this step"), HIGHLIGHT_COLOR)):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker={"color": color, "symbol": "square", "size": 12}))
    row_px = max(8, min(28, 420 // n_layers))
    height = max(320, 250 + row_px * n_layers)
    fig.update_layout(title=title, height=height,
                      margin={"l": 70, "r": 20, "t": 60 if title else 30, "b": 150},
                      legend={"orientation": "h", "y": -110 / (height - 210), "yanchor": "top",
                              "x": 0})
    fig.update_xaxes(title_text=_("cached token"), tickangle=slant(token_labels), showgrid=False,
                     zeroline=False, range=[-0.5, n - 0.5],
                     **axis_ticks(token_labels, labels_that_fit(NARROW_PX)))
    fig.update_yaxes(title_text=_("layer"), autorange="reversed", showgrid=False,
                     zeroline=False, range=[n_layers - 0.5, -0.5])
    fig = themed(fig)
    fig.update_layout(plot_bgcolor=LATER_COLOR)  # the room of later steps, faint
    return fig


def cache_bytes(step_labels: Sequence[str], measured, formula, without_gqa, *, step: int,
                cross: int = 0, title: str = "") -> go.Figure:
    """The decoder's KV cache in bytes after every step: measured from the cache tensors, the
    formula's value at the same steps, without grouped-query attention, and the
    cross-attention keys and values computed once (encoder-decoder).

    Args:
        step_labels: one label per step (x axis).
        measured, formula, without_gqa: ``[step]`` bytes.
        step: the step shown (1-based), marked with a line.
        cross: bytes of the cross-attention keys and values (0: none).
        title: the figure's title.

    Returns:
        a figure whose traces are named "measured", "formula", and, where they apply,
        "without GQA" and "cross-attention".
    """
    measured, formula, without = (np.asarray(a, dtype=float) for a in
                                  (measured, formula, without_gqa))
    n = len(step_labels)
    if not measured.shape == formula.shape == without.shape == (n,):
        raise ValueError(f"{n} steps, sizes {measured.shape}, {formula.shape}, {without.shape}")
    if not 1 <= step <= n:
        raise ValueError(f"step {step} is out of range 1..{n}")
    x = np.arange(1, n + 1)
    unit = _("bytes")
    hover = "%{y:,.0f} " + unit  # the step heads the unified hover, each line its trace's name
    fig = go.Figure()
    if not np.array_equal(without, measured):
        fig.add_trace(go.Scatter(
            x=x, y=without, name=_("without GQA"),
            meta="without GQA", mode="lines+markers",
            line={"color": RNN_CURVE_COLOR, "dash": "dash"},
            hovertemplate=hover))
    fig.add_trace(go.Scatter(
        x=x, y=measured, name=_("measured (the cache's tensors)"), meta="measured",
        mode="lines+markers", line={"color": ATTENTION_CURVE_COLOR, "width": 3},
        hovertemplate=hover))
    fig.add_trace(go.Scatter(
        x=x, y=formula, name=_("formula"),
        meta="formula", mode="markers",
        marker={"symbol": "x-thin-open", "size": 14, "color": HIGHLIGHT_COLOR,
                "line": {"width": 2, "color": HIGHLIGHT_COLOR}},
        hovertemplate=hover))
    if cross:
        fig.add_trace(go.Scatter(
            x=x, y=np.full(n, float(cross)), name=_("cross-attention K/V (once)"),
            meta="cross-attention", mode="lines", line={"color": head_color(2), "dash": "dot"},
            hovertemplate=hover))
    fig.add_vline(x=step, line_color=GUIDE_COLOR, line_width=2)
    fig.update_layout(title=title, height=440, margin={"l": 70, "r": 20, "t": 60, "b": 150},
                      legend={"orientation": "h", "y": -0.42, "yanchor": "top", "x": 0},
                      hovermode="x unified")
    every = math.ceil(n / labels_that_fit(NARROW_PX))  # thinned like the token axes
    fig.update_xaxes(title_text=_("step"), tickmode="array", tickvals=list(x[::every]),
                     ticktext=escape(step_labels)[::every], tickangle=slant(step_labels),
                     gridcolor=GRID_COLOR)
    fig.update_yaxes(title_text=unit, rangemode="tozero", gridcolor=GRID_COLOR,
                     **linear_ticks(max(measured.max(), formula.max(), without.max(),
                                        float(cross))))
    return themed(fig)
