"""Figures of the lesson §4.1, attention as a weighted average: the scores and the weights they
become, the weighted average among the words' information in a plane, and a real head's row
of weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import _
from viz.labels import axis_ticks, escape
from viz.lessons.layout import EXTRA
from viz.numbers import number
from viz.style import BAR_COLOR, GRID_COLOR, GUIDE_COLOR, HIGHLIGHT_COLOR, themed


def _check(words: Sequence[str], *arrays) -> list[np.ndarray]:
    out = [np.asarray(a, dtype=float) for a in arrays]
    for a in out:
        if a.shape[:1] != (len(words),):
            raise ValueError(f"{a.shape} does not match {len(words)} words")
    return out


def scores_and_weights(words: Sequence[str], scores, weights, highlight: int | None = None
                       ) -> go.Figure:
    """The scores (any numbers) above and the weights they become (softmax: positive, summing
    to 1) below, one bar per word, each value written on its bar.

    Args:
        words: ``n`` labels.
        scores: ``[n]`` relevance scores.
        weights: ``[n]`` their softmax.
        highlight: a word whose bars are drawn in the highlight colour (the largest weight).

    Returns:
        a figure of two bar traces (scores, weights) on two rows sharing the words' axis.
    """
    scores, weights = _check(words, scores, weights)
    labels = escape(words)
    colors = [HIGHLIGHT_COLOR if i == highlight else BAR_COLOR for i in range(len(words))]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14,
                        subplot_titles=(_("scores (any numbers)"),
                                        _("weights = softmax(scores): they add up to {total}")
                                        .format(total=number(float(weights.sum()), 2))))
    x = list(range(len(words)))
    fig.add_trace(go.Bar(x=x, y=scores, marker_color=colors, name=_("score"),
                         text=[number(s, 2) for s in scores], textposition="outside",
                         cliponaxis=False, customdata=labels,
                         hovertemplate="%{customdata}<br>" + _("score") + " %{y:.2f}" + EXTRA),
                  row=1, col=1)
    fig.add_trace(go.Bar(x=x, y=weights, marker_color=colors, name=_("weight"),
                         text=[number(w, 2) for w in weights], textposition="outside",
                         cliponaxis=False, customdata=labels,
                         hovertemplate="%{customdata}<br>" + _("weight") + " %{y:.4f}" + EXTRA),
                  row=2, col=1)
    low, high = min(0.0, float(scores.min())), max(0.0, float(scores.max()))
    pad = max((high - low) * 0.2, 0.5)
    fig.update_yaxes(range=[low - (pad if low < 0 else 0), high + pad], title_text=_("score"),
                     gridcolor=GRID_COLOR, zerolinecolor=GUIDE_COLOR, row=1, col=1)
    fig.update_yaxes(range=[0, max(1.0, float(weights.max()) * 1.2)], title_text=_("weight"),
                     gridcolor=GRID_COLOR, row=2, col=1)
    fig.update_xaxes(**axis_ticks(words), row=2, col=1)
    fig.update_xaxes(showticklabels=False, row=1, col=1)
    fig.update_layout(height=480, showlegend=False, bargap=0.3,
                      margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return themed(fig)


def mix_plane(words: Sequence[str], points, weights, output, *, title: str,
              axis_titles: tuple[str, str] = ("1", "2"), output_label: str | None = None
              ) -> go.Figure:
    """Each word's information as a dot as large as its weight, and their weighted average as
    a star, with a line from every dot to it as thick as the dot's weight.

    Args:
        words: ``n`` labels.
        points: ``[n, 2]`` the information, in a plane.
        weights: ``[n]`` weights summing to 1.
        output: ``[2]`` the weighted average.
        title: the figure's title; ``axis_titles``: the two axes'.
        output_label: what the star is called (default "weighted average").

    Returns:
        a figure whose last two traces are the dots (``customdata``: the weights) and the star.
    """
    points, weights = _check(words, points, weights)
    output = np.asarray(output, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2 or output.shape != (2,):
        raise ValueError(f"points {points.shape} and output {output.shape} are not in a plane")
    labels = escape(words)
    star = output_label or _("weighted average")
    fig = go.Figure()
    for (x, y), weight in zip(points, weights):
        fig.add_trace(go.Scatter(x=[x, output[0]], y=[y, output[1]], mode="lines",
                                 line={"color": GUIDE_COLOR, "width": 0.5 + 8 * weight},
                                 hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=points[:, 0], y=points[:, 1], mode="markers+text", name=_("information"),
        text=[f"{label} {weight:.2f}" for label, weight in zip(labels, weights)],
        textposition="top center", customdata=weights, cliponaxis=False,
        marker={"size": 8 + 44 * np.sqrt(np.clip(weights, 0, 1)), "color": BAR_COLOR,
                "line": {"width": 1, "color": "white"}},
        hovertemplate="%{text}<br>(%{x:.2f}, %{y:.2f})" + EXTRA))
    fig.add_trace(go.Scatter(
        x=[output[0]], y=[output[1]], mode="markers+text", name=star, text=[star],
        textposition="bottom center", cliponaxis=False,
        marker={"size": 22, "symbol": "star", "color": HIGHLIGHT_COLOR,
                "line": {"width": 1, "color": "white"}},
        hovertemplate=star + " (%{x:.3f}, %{y:.3f})" + EXTRA))
    every = np.vstack([points, output[None]])
    low, high = every.min(axis=0), every.max(axis=0)
    pad = np.maximum((high - low) * 0.2, 0.5)
    fig.update_layout(title=title, height=460, showlegend=False,
                      margin={"l": 60, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(range=[low[0] - pad[0], high[0] + pad[0]], title_text=axis_titles[0],
                     gridcolor=GRID_COLOR, zeroline=False)
    fig.update_yaxes(range=[low[1] - pad[1], high[1] + pad[1]], title_text=axis_titles[1],
                     gridcolor=GRID_COLOR, zeroline=False, scaleanchor="x", scaleratio=1)
    return themed(fig)


def model_row(tokens: Sequence[str], weights, key: int, *, title: str) -> go.Figure:
    """A head's row of weights for one query, one bar per source token, ``key`` highlighted.

    Args:
        tokens: ``n`` source tokens (repeated ones stay apart: integer positions).
        weights: ``[n]`` the row (sums to 1).
        key: the token the lesson points at (drawn in the highlight colour).
        title: the figure's title.

    Returns:
        a figure of one bar trace.
    """
    (weights,) = _check(tokens, weights)
    colors = [HIGHLIGHT_COLOR if i == key else BAR_COLOR for i in range(len(tokens))]
    fig = go.Figure(go.Bar(
        x=list(range(len(tokens))), y=weights, marker_color=colors, name=_("weight"),
        text=[number(w, 2) for w in weights], textposition="outside", cliponaxis=False,
        customdata=escape(tokens),
        hovertemplate="%{customdata}<br>" + _("weight") + " %{y:.4f}" + EXTRA))
    fig.update_layout(title=title, height=360, bargap=0.3, showlegend=False,
                      margin={"l": 60, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(**axis_ticks(tokens))
    fig.update_yaxes(range=[0, max(0.5, float(weights.max()) * 1.2)], title_text=_("weight"),
                     gridcolor=GRID_COLOR)
    return themed(fig)
