"""Causal-mask view (seed 3.4 step 2a): scores, mask, masked scores with −∞, softmax."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _
from viz.heatmap import _hover_data
from viz.labels import LINE, axis_ticks, check_weights, fit_ticks, label_extent
from viz.sizes import SCREEN_CHART_PX, SMALL_PROJECTOR_CHART_PX
from viz.style import (
    ALLOWED_COLOR,
    CELL_FONT_SIZE,
    CELL_TEXT_COLOR,
    DIVERGING_SCALE,
    MARK_FONT_SIZE,
    MASK_COLOR,
    NEG_INF_COLOR,
    NEG_INF_TEXT_COLOR,
    SMALL_TICK_FONT,
    WEIGHT_SCALE,
    themed,
)

MAX_TOKENS = 96
MARKS_UP_TO = 144  # cells a panel writes ✓/✗ and −∞ in (12 × 12)
PANELS = (N_("① scores QKᵀ/√dₖ"), N_("② mask"), N_("③ masked: −∞"), N_("④ softmax"))
EXTRA = "<extra></extra>"
# A projector's 2 × 2 layout: text sizes as viz.present draws them, each panel this tall.
PROJECTOR_TICK_PX, PROJECTOR_PANEL_TITLE_PX = 18, 20
PROJECTOR_PANEL_PX = (220, 312)  # a panel's height: least, most
PROJECTOR_ROW_PX = 26  # a row's height until the panel is the tallest


def mask_view(scores, allowed, weights, query_tokens: Sequence[str],
              key_tokens: Sequence[str], *, title: str = "",
              query_hover: Sequence[str] | None = None,
              key_hover: Sequence[str] | None = None,
              special: tuple[Sequence[int], Sequence[int]] = ((), ()),
              steps: int = 4, columns: int = 2, projector: bool = False) -> go.Figure:
    """Four panels: raw scores, the mask, masked scores and the softmax, two by two (① ② above
    ③ ④) or in one row (``columns=4``).

    Args:
        scores: ``[query, key]`` scores before masking.
        allowed: bool ``[query, key]``, True where the model may attend.
        weights: ``[query, key]`` weights after softmax.
        query_tokens, key_tokens: axis labels.
        title: the figure's title.
        query_hover, key_hover: what hovering a cell says of its query and key (default
            ``"i: token"``, i counted from the first token drawn).
        special: positions of special tokens on the query and key axes, drawn grey italic.
        steps: how many panels are revealed, in reading order (1-4; a class is shown one step
            at a time): the others keep their place and title but draw nothing.
        columns: 2 (two rows of two) or 4 (one row).
        projector: laid out for presentation mode's text (:mod:`viz.present`: 18 px labels,
            marks and values in cells) on a projector, with larger panels; the figure says so
            (``layout.meta["projector"]``) and keeps its height there.

    Returns:
        a figure whose traces are, in order: scores, mask, masked scores (−∞ cells NaN), the
        −∞ layer (1 where masked), weights (masked cells NaN) and, where anything is masked,
        the grey layer of the masked weights; panel p's axes are ``x{p}``/``y{p}`` in either
        layout. Up to 12 × 12 tokens, the mask's cells hold ✓ or ✗ and the masked cells −∞
        (annotations named ``"mark"``).
    """
    scores = check_weights(scores, query_tokens, key_tokens)
    weights = check_weights(weights, query_tokens, key_tokens)
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape != scores.shape:
        raise ValueError(f"mask of shape {allowed.shape} does not match scores {scores.shape}")
    n_q, n_k = scores.shape
    if max(n_q, n_k) > MAX_TOKENS:
        raise ValueError(f"the mask view draws at most {MAX_TOKENS} tokens a side; choose a "
                         f"window of the input")
    if columns not in (2, 4):
        raise ValueError(f"columns must be 2 or 4, not {columns}")
    if not 1 <= steps <= len(PANELS):
        raise ValueError(f"steps must be 1 to {len(PANELS)}, not {steps}")
    custom = _hover_data(query_tokens, key_tokens, query_hover, key_hover)
    finite = scores[np.isfinite(scores)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    if projector:
        panel = int(max(PROJECTOR_PANEL_PX[0], min(PROJECTOR_PANEL_PX[1],
                                                   PROJECTOR_ROW_PX * max(n_q, n_k))))
        tick_px, title_px, top = PROJECTOR_TICK_PX, PROJECTOR_PANEL_TITLE_PX, 110
    else:
        panel = max(200, min(310, 22 * max(n_q, n_k) + 40))
        tick_px, title_px, top = SMALL_TICK_FONT["size"], 16, 90
    rows = 4 // columns
    places = [(1 + p // columns, 1 + p % columns) for p in range(4)]
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=[_(p) for p in PANELS],
                        horizontal_spacing=0.04 if columns == 2 else 0.045,
                        vertical_spacing=0.1 if rows > 1 else 0.2)
    hover = _("query %{customdata[0]}<br>key %{customdata[1]}<br>")
    fig.add_trace(go.Heatmap(z=scores, customdata=custom, coloraxis="coloraxis",
                             hovertemplate=hover + _("score %{z:.3f}") + EXTRA,
                             name="scores"), *places[0])
    fig.add_trace(go.Heatmap(z=allowed.astype(float), customdata=custom, showscale=False,
                             colorscale=[[0, MASK_COLOR], [1, ALLOWED_COLOR]], zmin=0, zmax=1,
                             hovertemplate=hover + _("allowed %{z}") + EXTRA, name="mask"),
                  *places[1])
    masked = np.where(allowed, scores, np.nan)
    fig.add_trace(go.Heatmap(z=masked, customdata=custom, coloraxis="coloraxis",
                             hovertemplate=hover + _("score %{z:.3f}") + EXTRA,
                             name="masked scores", hoverongaps=False), *places[2])
    fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                             showscale=False, colorscale=[[0, NEG_INF_COLOR], [1, NEG_INF_COLOR]],
                             hovertemplate=hover + _("−∞ (masked)") + EXTRA, name="−∞",
                             hoverongaps=False), *places[2])
    fig.add_trace(go.Heatmap(z=np.where(allowed, weights, np.nan), customdata=custom,
                             coloraxis="coloraxis2", hoverongaps=False, name="weights",
                             hovertemplate=hover + _("weight %{z:.3f}") + EXTRA), *places[3])
    if not allowed.all():  # forbidden cells grey, apart from the white of a zero weight
        fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                                 showscale=False, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
                                 hovertemplate=hover + _("masked: weight 0") + EXTRA,
                                 name="masked", hoverongaps=False), *places[3])
    for trace in fig.data:  # the panels not revealed yet keep their place, empty
        if int((trace.xaxis or "x").removeprefix("x") or 1) > steps:
            trace.visible = False
    for number, panel_title in enumerate(fig.layout.annotations, start=1):
        panel_title.font = {"size": title_px, **({"color": MASK_COLOR} if number > steps
                                                  else {})}
    marks = []
    if n_q * n_k <= MARKS_UP_TO:  # small enough to write −∞ and ✓/✗ in the cells
        # one list, set once: adding annotations one by one copies them all each time (seconds
        # for 12 × 12 tokens)
        for r, c in zip(*np.nonzero(~allowed)) if steps >= 3 else ():
            marks.append({"x": int(c), "y": int(r), "text": "−∞", "showarrow": False,
                          "xref": "x3", "yref": "y3", "name": "mark",
                          "font": {"color": NEG_INF_TEXT_COLOR,
                                   "size": tick_px if projector else CELL_FONT_SIZE}})
        if steps >= 2:
            marks += [{"x": c, "y": r, "text": "✓" if allowed[r, c] else "✗", "showarrow": False,
                       "xref": "x2", "yref": "y2", "name": "mark",
                       "font": {"size": tick_px if projector else MARK_FONT_SIZE,
                                "color": CELL_TEXT_COLOR}}
                      for r in range(n_q) for c in range(n_k)]
    colour_bars = ({"len": 0.45, "y": 1.0, "yanchor": "top"},
                   {"len": 0.45, "y": 0.0, "yanchor": "bottom"})
    fig.update_layout(
        title=title, annotations=list(fig.layout.annotations) + marks,
        margin={"l": 50, "r": 20, "t": top, "b": 40},
        coloraxis={"colorscale": DIVERGING_SCALE, "reversescale": True, "cmin": -bound,
                   "cmax": bound,
                   "colorbar": {"title": {"text": _("score")}, "x": 1.0, "nticks": 4,
                                **colour_bars[0]}},
        coloraxis2={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                    "colorbar": {"title": {"text": _("weight")}, "x": 1.0, "nticks": 4,
                                 **colour_bars[1]}})
    x_ticks = axis_ticks(key_tokens, n_k, special=special[1])
    y_ticks = axis_ticks(query_tokens, n_q, special=special[0])
    for row, col in places:
        fig.update_xaxes(tickfont={"size": tick_px}, showgrid=False, zeroline=False, row=row,
                         col=col, **x_ticks)
        fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False,
                         tickfont={"size": tick_px}, row=row, col=col,
                         **(y_ticks if col == 1 else {"showticklabels": False}))
    if projector:
        fig.update_layout(meta={"projector": True})
    width = SMALL_PROJECTOR_CHART_PX if projector else SCREEN_CHART_PX
    fit_ticks(fig, width, font_px=tick_px)
    # the panels' height, and between rows the upper panels' key labels as fitted and the
    # lower panels' titles
    labels = fig.layout.xaxis
    extent = label_extent(labels.ticktext, tick_px, labels.tickangle) + 12
    gap = extent + title_px * LINE + 8 if rows > 1 else 0
    plot = rows * panel + gap
    for row in range(rows):
        hi = 1 - row * (panel + gap) / plot
        for col in range(columns):
            number = row * columns + col + 1
            fig.layout["yaxis" if number == 1 else f"yaxis{number}"].domain = (
                max(0.0, hi - panel / plot), min(1.0, hi))
            fig.layout.annotations[number - 1].y = min(1.0, hi)
    fig.layout.margin.b = max(fig.layout.margin.b, math.ceil(extent))
    fig.layout.height = fig.layout.margin.t + plot + fig.layout.margin.b
    return themed(fig)
