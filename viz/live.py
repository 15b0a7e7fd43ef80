"""A live class's reveal: the class's answers beside the model's real answer.

A choice question (a token, a head) draws one bar per option with the share of the class that
tapped it, and over it the model's own weight of that option (the head's row, or every head's
weight of one cell) as a marker, the model's answer outlined; a number question draws the
class's numbers as a histogram with the model's number as a line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import axis_ticks, escape
from viz.style import BAR_COLOR, GRID_COLOR, GUIDE_COLOR, HIGHLIGHT_COLOR, themed


def votes_figure(options: Sequence[str], votes: Sequence[int], *,
                 weights: Sequence[float] | None = None, answer: int | None = None,
                 title: str = "") -> go.Figure:
    """The class's votes per option as horizontal bars (the share of those who answered),
    first option on top, with the model's ``weights`` per option as diamonds on the same 0..1
    axis and the model's ``answer`` drawn in the highlight colour.

    Returns a figure whose first trace (``go.Bar``) has the shares as ``x`` and the vote counts
    as ``customdata``; the second (when weights are given) the weights.
    """
    votes = np.asarray(votes, dtype=float)
    if votes.ndim != 1 or len(votes) != len(options):
        raise ValueError(f"{votes.shape} votes do not match {len(options)} options")
    if weights is not None and len(weights) != len(options):
        raise ValueError(f"{len(weights)} weights do not match {len(options)} options")
    if answer is not None and not 0 <= answer < len(options):
        raise ValueError(f"answer {answer} is out of range 0..{len(options) - 1}")
    total = votes.sum()
    shares = votes / total if total else votes
    labels = escape(options)
    colors = [HIGHLIGHT_COLOR if index == answer else BAR_COLOR for index in range(len(options))]
    rows = list(range(len(options)))
    fig = go.Figure(go.Bar(
        x=shares, y=rows, orientation="h", marker_color=colors, name=_("the class"),
        customdata=[[int(count), label] for count, label in zip(votes, labels)],
        text=[f"{int(count)}" if count else "" for count in votes], textposition="outside",
        cliponaxis=False,
        hovertemplate="%{customdata[1]}<br>" + _("votes") + " %{customdata[0]} "
                      "(%{x:.0%})<extra></extra>"))
    if weights is not None:
        fig.add_trace(go.Scatter(
            x=[float(weight) for weight in weights], y=rows, mode="markers",
            name=_("the model's weight"), customdata=labels,
            marker={"symbol": "diamond", "size": 14, "color": GUIDE_COLOR,
                    "line": {"width": 2, "color": HIGHLIGHT_COLOR}},
            hovertemplate="%{customdata}<br>" + _("the model's weight") +
                          " %{x:.3f}<extra></extra>"))
    fig.update_layout(
        title=title, height=max(260, 110 + 30 * len(options)), bargap=0.25,
        margin={"l": 90, "r": 40, "t": 60 if title else 20, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        showlegend=weights is not None)
    fig.update_xaxes(range=[0, 1.1], title_text=_("share of the class · the model's weight"),
                     tickformat=".0%", showgrid=True, gridcolor=GRID_COLOR)
    fig.update_yaxes(autorange="reversed", **axis_ticks(labels))
    return themed(fig)


def numbers_figure(numbers: Sequence[float], answer: float, *, title: str = "") -> go.Figure:
    """The class's numbers as a histogram, with the model's ``answer`` as a vertical line."""
    numbers = [float(number) for number in numbers]
    fig = go.Figure(go.Histogram(x=numbers, marker_color=BAR_COLOR, name=_("the class"),
                                 hovertemplate=_("answers") + " %{y}<extra></extra>"))
    fig.add_vline(x=float(answer), line={"color": HIGHLIGHT_COLOR, "width": 4},
                  annotation_text=_("the model: {value}").format(
                      value=f"{int(answer):,}" if float(answer).is_integer() else f"{answer:.6g}"),
                  annotation_position="top")
    fig.update_layout(title=title, height=360, bargap=0.05, showlegend=False,
                      margin={"l": 60, "r": 40, "t": 80 if title else 40, "b": 50})
    fig.update_xaxes(title_text=_("the class's answers"), showgrid=True, gridcolor=GRID_COLOR)
    # whole students on the axis: a step of at least 1 (a histogram of 30 numbers: ~6 ticks)
    fig.update_yaxes(title_text=_("students"), showgrid=True, gridcolor=GRID_COLOR, tick0=0,
                     dtick=max(1, math.ceil(len(numbers) / 6)))
    return themed(fig)
