"""Figures of the lesson §3.7: the three families side by side, each with its mask and
one head (numbers from :mod:`model.lessons.families`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import _
from viz.heatmap import _hover_data
from viz.labels import axis_ticks, check_weights, fit_ticks
from viz.lessons.layout import EXTRA, query_key_hover
from viz.sizes import SCREEN_CHART_PX
from viz.style import (
    ALLOWED_COLOR,
    CELL_TEXT_COLOR,
    MARK_FONT_SIZE,
    MASK_COLOR,
    SMALL_TICK_FONT,
    WEIGHT_SCALE,
    themed,
)


def family_panels(allowed, weights, query_labels: Sequence[str], key_labels: Sequence[str], *,
                  query_hover: Sequence[str] | None = None,
                  special: tuple[Sequence[int], Sequence[int]] = ((), ()),
                  mask_title: str = "", head_title: str = "", title: str = "",
                  y_title: str | None = None) -> go.Figure:
    """One family's mask (✓ may attend, ✗ masked) above one head's weights, for a column a
    third of the page wide.

    Args:
        allowed: bool ``[query, key]``.
        weights: ``[query, key]`` one head's weights.
        query_labels, key_labels: the axes' labels.
        query_hover: what hovering a row says of its query.
        special: special tokens on the query and key axes (grey italic).
        mask_title, head_title: the two panels' titles.
        title: the figure's title.
        y_title: the rows' axis title.

    Returns:
        a figure with the mask (trace "mask") in the top panel and the weights (trace
        "weights", masked cells NaN) and the masked cells (trace "masked") in the bottom one.
    """
    weights = check_weights(weights, query_labels, key_labels)
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape != weights.shape:
        raise ValueError(f"mask of shape {allowed.shape} does not match weights {weights.shape}")
    n_q, n_k = weights.shape
    custom = _hover_data(query_labels, key_labels, query_hover)
    hover = query_key_hover()
    fig = make_subplots(rows=2, cols=1, subplot_titles=[mask_title, head_title],
                        vertical_spacing=0.12)
    fig.add_trace(go.Heatmap(z=allowed.astype(float), customdata=custom, showscale=False,
                             colorscale=[[0, MASK_COLOR], [1, ALLOWED_COLOR]], zmin=0, zmax=1,
                             xgap=1, ygap=1, name="mask",
                             hovertemplate=hover + _("allowed %{z}") + EXTRA), row=1, col=1)
    fig.add_trace(go.Heatmap(z=np.where(allowed, weights, np.nan), customdata=custom,
                             coloraxis="coloraxis", hoverongaps=False, name="weights",
                             hovertemplate=hover + _("weight %{z:.3f}") + EXTRA), row=2, col=1)
    if not allowed.all():
        fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                                 showscale=False, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
                                 hoverongaps=False, name="masked",
                                 hovertemplate=hover + _("masked: weight 0") + EXTRA),
                      row=2, col=1)
    marks = []
    if n_q * n_k <= 144:  # small enough for ✓ and ✗ in the mask's cells (set at once: adding
        # annotations one by one copies them all each time)
        marks = [{"x": c, "y": r, "text": "✓" if allowed[r, c] else "✗", "showarrow": False,
                  "xref": "x", "yref": "y", "name": "mark",
                  "font": {"size": MARK_FONT_SIZE, "color": CELL_TEXT_COLOR}}
                 for r in range(n_q) for c in range(n_k)]
    side = max(200, min(320, 26 * max(n_q, n_k) + 40))
    fig.update_layout(
        title=title, height=2 * side + 260, annotations=list(fig.layout.annotations) + marks,
        margin={"l": 60, "r": 10, "t": 80 if title else 50, "b": 60},
        coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                   # at the figure's foot, under the keys' labels (their room is fitted)
                   "colorbar": {"title": {"text": _("weight"), "side": "top"},
                                "orientation": "h", "lenmode": "fraction", "len": 1.0,
                                "x": 0.5, "xanchor": "center", "y": 0, "yref": "container",
                                "yanchor": "bottom", "thickness": 10}})
    for row in (1, 2):
        # the keys are labelled once, under the head: the mask above has the same columns
        x_ticks = axis_ticks(key_labels, n_k, special=special[1]) if row == 2 else {
            "showticklabels": False}
        fig.update_xaxes(tickfont=SMALL_TICK_FONT, showgrid=False, zeroline=False, row=row,
                         col=1, **x_ticks)
        fig.update_yaxes(autorange="reversed", tickfont=SMALL_TICK_FONT, showgrid=False,
                         zeroline=False, row=row, col=1,
                         title_text=y_title if row == 2 else None,
                         **axis_ticks(query_labels, n_q, special=special[0]))
    # a column a third of the page wide (the page fits it again to where it draws it)
    fit_ticks(fig, SCREEN_CHART_PX / 3)
    return themed(fig)
