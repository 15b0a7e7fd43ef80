"""Causal-mask view (seed 3.4 step 2a): scores, mask, masked scores with −∞, softmax."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _
from viz.heatmap import _hover_data
from viz.labels import axis_ticks, check_weights, labels_that_fit
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
PANEL_PX = 150
PANELS = (N_("① scores QKᵀ/√dₖ"), N_("② mask"), N_("③ masked: −∞"), N_("④ softmax"))
EXTRA = "<extra></extra>"


def mask_view(scores, allowed, weights, query_tokens: Sequence[str],
              key_tokens: Sequence[str], *, title: str = "",
              query_hover: Sequence[str] | None = None,
              key_hover: Sequence[str] | None = None,
              special: tuple[Sequence[int], Sequence[int]] = ((), ()),
              steps: int = 4) -> go.Figure:
    """Four panels side by side: raw scores, the mask, masked scores and the softmax.

    Args:
        scores: ``[query, key]`` scores before masking.
        allowed: bool ``[query, key]``, True where the model may attend.
        weights: ``[query, key]`` weights after softmax.
        query_tokens, key_tokens: axis labels.
        title: the figure's title.
        query_hover, key_hover: what hovering a cell says of its query and key (default
            ``"i: token"``, i counted from the first token drawn).
        special: positions of special tokens on the query and key axes, drawn grey italic.
        steps: how many panels are revealed, from the left (1-4; a class is shown one step at
            a time): the others keep their place and title but draw nothing.

    Returns:
        a figure whose traces are, in order: scores, mask, masked scores (−∞ cells NaN), the
        −∞ layer (1 where masked), weights (masked cells NaN) and, where anything is masked,
        the grey layer of the masked weights.
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
    custom = _hover_data(query_tokens, key_tokens, query_hover, key_hover)
    finite = scores[np.isfinite(scores)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    if not 1 <= steps <= len(PANELS):
        raise ValueError(f"steps must be 1 to {len(PANELS)}, not {steps}")
    fig = make_subplots(rows=1, cols=4, subplot_titles=[_(panel) for panel in PANELS],
                        horizontal_spacing=0.045)
    hover = _("query %{customdata[0]}<br>key %{customdata[1]}<br>")
    fig.add_trace(go.Heatmap(z=scores, customdata=custom, coloraxis="coloraxis",
                             hovertemplate=hover + _("score %{z:.3f}") + EXTRA,
                             name="scores"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=allowed.astype(float), customdata=custom, showscale=False,
                             colorscale=[[0, MASK_COLOR], [1, ALLOWED_COLOR]], zmin=0, zmax=1,
                             hovertemplate=hover + _("allowed %{z}") + EXTRA, name="mask"),
                  row=1, col=2)
    masked = np.where(allowed, scores, np.nan)
    fig.add_trace(go.Heatmap(z=masked, customdata=custom, coloraxis="coloraxis",
                             hovertemplate=hover + _("score %{z:.3f}") + EXTRA,
                             name="masked scores", hoverongaps=False), row=1, col=3)
    fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                             showscale=False, colorscale=[[0, NEG_INF_COLOR], [1, NEG_INF_COLOR]],
                             hovertemplate=hover + _("−∞ (masked)") + EXTRA, name="−∞",
                             hoverongaps=False), row=1, col=3)
    fig.add_trace(go.Heatmap(z=np.where(allowed, weights, np.nan), customdata=custom,
                             coloraxis="coloraxis2", hoverongaps=False, name="weights",
                             hovertemplate=hover + _("weight %{z:.3f}") + EXTRA),
                  row=1, col=4)
    if not allowed.all():  # forbidden cells grey, apart from the white of a zero weight
        fig.add_trace(go.Heatmap(z=np.where(allowed, np.nan, 1.0), customdata=custom,
                                 showscale=False, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
                                 hovertemplate=hover + _("masked: weight 0") + EXTRA,
                                 name="masked", hoverongaps=False), row=1, col=4)
    for trace in fig.data:  # the panels not revealed yet keep their place, empty
        if int((trace.xaxis or "x").removeprefix("x") or 1) > steps:
            trace.visible = False
    for number, panel_title in enumerate(fig.layout.annotations, start=1):
        if number > steps:
            panel_title.font = {"color": MASK_COLOR}
    if n_q * n_k <= 144:  # small enough to write −∞ and ✓/✗ in the cells
        for r in range(n_q):
            for c in range(n_k):
                if not allowed[r, c] and steps >= 3:
                    fig.add_annotation(x=c, y=r, text="−∞", showarrow=False, xref="x3",
                                       yref="y3", font={"color": NEG_INF_TEXT_COLOR,
                                                        "size": CELL_FONT_SIZE})
                if steps >= 2:
                    fig.add_annotation(x=c, y=r, text="✓" if allowed[r, c] else "✗",
                                       showarrow=False, xref="x2", yref="y2",
                                       font={"size": MARK_FONT_SIZE, "color": CELL_TEXT_COLOR})
    size = max(220, min(330, 22 * max(n_q, n_k) + 60))
    fig.update_layout(
        title=title, height=size + 150,
        margin={"l": 70, "r": 20, "t": 90, "b": 80},
        coloraxis={"colorscale": DIVERGING_SCALE, "reversescale": True, "cmin": -bound,
                   "cmax": bound,
                   "colorbar": {"title": {"text": _("score")}, "x": 1.0, "len": 0.45, "y": 0.78,
                                "nticks": 4}},
        coloraxis2={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                    "colorbar": {"title": {"text": _("weight")}, "x": 1.0, "len": 0.45,
                                 "y": 0.22, "nticks": 4}})
    # Four panels share the width (about 150 px each on a 1024 px screen) and `size` px of height.
    x_labels, y_labels = labels_that_fit(PANEL_PX), labels_that_fit(size - 60)
    for col in range(1, 5):
        fig.update_xaxes(tickangle=-60, tickfont=SMALL_TICK_FONT, showgrid=False, row=1, col=col,
                         **axis_ticks(key_tokens, x_labels, special=special[1]))
        y_ticks = axis_ticks(query_tokens, y_labels, special=special[0]) if col == 1 else {
            "showticklabels": False}
        fig.update_yaxes(autorange="reversed", showgrid=False, tickfont=SMALL_TICK_FONT, row=1,
                         col=col, **y_ticks)
    return themed(fig)
