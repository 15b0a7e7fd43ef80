"""Figures of the lesson §4.7, the three kinds of attention side by side: one head of each,
its axes named by who asks (Q) and whose dictionary it reads (K/V) (numbers from
:mod:`model.lessons.kinds`).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from viz.heatmap import attention_heatmap
from viz.labels import fit_ticks
from viz.sizes import SCREEN_CHART_PX


def kind_panel(weights, query_labels: Sequence[str], key_labels: Sequence[str], *, allowed,
               asks: str, dictionary: str, title: str = "",
               query_hover: Sequence[str] | None = None,
               special: tuple[Sequence[int], Sequence[int]] = ((), ())) -> go.Figure:
    """One kind's head for a column a third of the page wide: rows are who asks, columns whose
    dictionary is read, masked cells grey, without a colour bar (the app's 0–1 blues; a cell's
    hover says its weight).

    Args:
        weights: ``[query, key]`` one head's weights.
        query_labels, key_labels: the axes' labels.
        allowed: bool ``[query, key]``: the kind's mask (False cells drawn masked).
        asks: the rows' title (who asks, Q); ``dictionary``: the columns' (K/V).
        title: the figure's title.
        query_hover: what hovering a row says of its query.
        special: special tokens on the query and key axes.

    Returns:
        :func:`viz.heatmap.attention_heatmap`'s figure: its first trace holds the weights
        (masked cells NaN).
    """
    fig = attention_heatmap(weights, query_labels, key_labels, allowed=allowed, title=title,
                            x_title=dictionary, y_title=asks, query_hover=query_hover,
                            special=special)
    n_q = len(query_labels)
    fig.update_layout(
        height=max(380, 26 * n_q + 260),
        margin={"l": 60, "r": 10, "t": 60 if title else 30, "b": 60},
        coloraxis_showscale=False)  # three panels share the app's 0–1 scale; hovers say it
    fit_ticks(fig, SCREEN_CHART_PX / 3)
    return fig
