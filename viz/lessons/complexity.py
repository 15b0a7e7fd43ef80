"""Figures of the lesson §4.8: complexity with n and d both chosen (numbers from
:mod:`model.lessons.complexity`).
"""

from __future__ import annotations

import plotly.graph_objects as go

from i18n import _
from viz.costs import complexity_curves
from viz.lessons.layout import EXTRA
from viz.style import (
    ATTENTION_CURVE_COLOR,
    HIGHLIGHT_COLOR,
    POINT_MARKER_SIZE,
    RNN_CURVE_COLOR,
)


def complexity_lesson(n: int, d: int) -> go.Figure:
    """:func:`viz.costs.complexity_curves` for a chosen ``n`` and ``d``: the two curves, the
    lines n = d and n (labelled where they are, at log10 of their x on the log axis), a point
    on each curve at ``n`` and the crossover point (d, d³).

    Returns:
        the figure, with traces "self-attention n²·d", "RNN n·d²", then points named
        "at n" (two) and "crossover".
    """
    fig = complexity_curves(d, n)
    fig.layout.annotations[1].text = _("chosen n = {n:,}").format(n=n)  # not a traced input
    for y, color, name in ((float(n) ** 2 * d, ATTENTION_CURVE_COLOR, _("n²·d at the chosen n")),
                           (float(n) * d ** 2, RNN_CURVE_COLOR, _("n·d² at the chosen n"))):
        fig.add_trace(go.Scatter(
            x=[n], y=[y], mode="markers", name=name, meta="at n", showlegend=False,
            marker={"color": color, "size": POINT_MARKER_SIZE + 6, "line": {"width": 1}},
            hovertemplate=name + "<br>%{y:,.0f}" + EXTRA))
    cross = float(d) ** 3
    fig.add_trace(go.Scatter(
        x=[d], y=[cross], mode="markers", name=_("crossover: n = d, both d³"),
        meta="crossover", showlegend=False,
        marker={"symbol": "diamond", "size": POINT_MARKER_SIZE + 8, "color": HIGHLIGHT_COLOR,
                "line": {"width": 1}},
        hovertemplate=_("crossover: n = d, both d³") + "<br>%{y:,.0f}" + EXTRA))
    return fig
