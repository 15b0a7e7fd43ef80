"""Figures of the lesson §3.4, every mask: one mask applied to one head's scores as three small
heatmaps in a row (① the scores QKᵀ/√d_k, ② the mask with −∞ written where it forbids, ③ the
softmax, forbidden cells grey at weight 0), for the four masks of a sequence and for a padded
batch (numbers from :mod:`model.lessons.masks`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _
from viz.heatmap import _hover_data
from viz.labels import axis_ticks, check_weights, fit_ticks
from viz.lessons.layout import EXTRA, query_key_hover, symmetric
from viz.sizes import SCREEN_CHART_PX, SMALL_PROJECTOR_CHART_PX
from viz.style import (
    ALLOWED_COLOR,
    CELL_FONT_SIZE,
    DIVERGING_SCALE,
    MASK_COLOR,
    NEG_INF_COLOR,
    NEG_INF_TEXT_COLOR,
    SMALL_TICK_FONT,
    WEIGHT_SCALE,
    themed,
)

PANELS = (N_("① scores QKᵀ/√dₖ"), N_("② mask (−∞ where it forbids)"), N_("③ softmax"))
MARKS_UP_TO = 16  # tokens a side up to which the mask's forbidden cells are written −∞
PROJECTOR_TICK_PX = 18  # presentation mode's tick labels (viz.present.TICK_PX)
PANEL_PX = (190, 300)  # a panel's height: on a screen, on a projector


def mask_steps(scores, allowed, weights, query_labels: Sequence[str],
               key_labels: Sequence[str], *, query_hover: Sequence[str] | None = None,
               key_hover: Sequence[str] | None = None,
               special: tuple[Sequence[int], Sequence[int]] = ((), ()), title: str = "",
               projector: bool = False) -> go.Figure:
    """One mask applied to one head: scores, mask and softmax side by side.

    Args:
        scores: ``[query, key]`` scores before the mask.
        allowed: bool ``[query, key]``, True where the query may attend.
        weights: ``[query, key]`` the softmax of the masked scores (forbidden cells 0).
        query_labels, key_labels: the axes' labels.
        query_hover, key_hover: what hovering a row or a column says of it.
        special: positions of special tokens (``<bos>``, ``<pad>``) on the query and key
            axes, drawn grey italic.
        title: the figure's title.
        projector: laid out for presentation mode (18 px labels, taller panels); the figure
            says so (``layout.meta["projector"]``) and keeps its height there.

    Returns:
        a figure whose traces are, in order: ``scores`` (panel 1), ``mask`` (1 allowed, NaN
        forbidden) and ``−∞`` (1 where forbidden) in panel 2, ``weights`` (forbidden cells
        NaN) and, where anything is forbidden, ``masked`` (the grey of weight 0) in panel 3;
        the panels' axes are ``x``/``y``, ``x2``/``y2``, ``x3``/``y3``. Up to
        :data:`MARKS_UP_TO` tokens a side, the forbidden cells of the mask hold "−∞"
        (annotations named ``"mark"``).
    """
    scores = check_weights(scores, query_labels, key_labels).astype(float)
    weights = check_weights(weights, query_labels, key_labels).astype(float)
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape != scores.shape:
        raise ValueError(f"mask of shape {allowed.shape} does not match scores {scores.shape}")
    n_q, n_k = scores.shape
    custom = _hover_data(query_labels, key_labels, query_hover, key_hover)
    hover = query_key_hover()
    bound = symmetric(scores)
    fig = make_subplots(rows=1, cols=3, subplot_titles=[_(p) for p in PANELS],
                        horizontal_spacing=0.05)
    fig.add_trace(go.Heatmap(z=scores, customdata=custom, coloraxis="coloraxis", name="scores",
                             hovertemplate=hover + _("score %{z:.3f}") + EXTRA), 1, 1)
    fig.add_trace(go.Heatmap(z=np.where(allowed, 1.0, np.nan), customdata=custom,
                             showscale=False, colorscale=[[0, ALLOWED_COLOR], [1, ALLOWED_COLOR]],
                             hoverongaps=False, xgap=1, ygap=1, name="mask",
                             hovertemplate=hover + _("allowed: + 0") + EXTRA), 1, 2)
    fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                             showscale=False, colorscale=[[0, NEG_INF_COLOR], [1, NEG_INF_COLOR]],
                             hoverongaps=False, xgap=1, ygap=1, name="−∞",
                             hovertemplate=hover + _("forbidden: −∞") + EXTRA), 1, 2)
    fig.add_trace(go.Heatmap(z=np.where(allowed, weights, np.nan), customdata=custom,
                             coloraxis="coloraxis2", hoverongaps=False, name="weights",
                             hovertemplate=hover + _("weight %{z:.3f}") + EXTRA), 1, 3)
    if not allowed.all():
        fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                                 showscale=False, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
                                 hoverongaps=False, name="masked",
                                 hovertemplate=hover + _("masked: weight 0") + EXTRA), 1, 3)
    tick_px = PROJECTOR_TICK_PX if projector else SMALL_TICK_FONT["size"]
    marks = []
    if max(n_q, n_k) <= MARKS_UP_TO:  # one list, set once (adding one by one copies them all)
        marks = [{"x": int(c), "y": int(r), "text": "−∞", "showarrow": False, "xref": "x2",
                  "yref": "y2", "name": "mark",
                  "font": {"color": NEG_INF_TEXT_COLOR,
                           "size": tick_px if projector else CELL_FONT_SIZE}}
                 for r, c in zip(*np.nonzero(~allowed))]
    domains = [fig.layout[f"xaxis{i if i > 1 else ''}"].domain for i in (1, 2, 3)]

    def foot_bar(domain, text: str) -> dict:  # a horizontal colour bar under a panel
        return {"title": {"text": text, "side": "right"}, "orientation": "h",
                "lenmode": "fraction", "len": domain[1] - domain[0],
                "x": (domain[0] + domain[1]) / 2, "xanchor": "center", "y": 0,
                "yref": "container", "yanchor": "bottom", "thickness": 10, "nticks": 4}

    panel = PANEL_PX[1] if projector else PANEL_PX[0]
    top = 90 if title else 50
    fig.update_layout(
        title=title, annotations=list(fig.layout.annotations) + marks,
        margin={"l": 50, "r": 10, "t": top, "b": 60},
        coloraxis={"colorscale": DIVERGING_SCALE, "reversescale": True, "cmin": -bound,
                   "cmax": bound, "colorbar": foot_bar(domains[0], _("score"))},
        coloraxis2={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                    "colorbar": foot_bar(domains[2], _("weight"))})
    for panel_title in fig.layout.annotations[:len(PANELS)]:
        panel_title.font = {"size": 20 if projector else 14}
    x_ticks = axis_ticks(key_labels, n_k, special=special[1])
    y_ticks = axis_ticks(query_labels, n_q, special=special[0])
    for col in (1, 2, 3):
        fig.update_xaxes(tickfont={"size": tick_px}, showgrid=False, zeroline=False, row=1,
                         col=col, **x_ticks)
        fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False,
                         tickfont={"size": tick_px}, row=1, col=col,
                         **(y_ticks if col == 1 else {"showticklabels": False}))
    if projector:
        fig.update_layout(meta={"projector": True})
    fit_ticks(fig, SMALL_PROJECTOR_CHART_PX if projector else SCREEN_CHART_PX, font_px=tick_px)
    fig.layout.height = top + panel + fig.layout.margin.b
    return themed(fig)
