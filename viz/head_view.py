"""Head view: lines from each query token (left) to each key token (right), one colour a head.

Line opacity is the attention weight (quantised to a few levels so that a head needs only a
few traces); weights under ``min_weight`` are not drawn. ``focus`` keeps only the lines of one
query token. Each head has a legend entry in its full colour and line style, whatever its
weights. The figure's height is bounded: past about 40 tokens a side the rows draw closer and
only every k-th token is labelled (every token keeps its marker and hover).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import escape, labels_that_fit
from viz.style import (
    TOKEN_MARKER_COLOR,
    TOKEN_MARKER_SIZE,
    head_color,
    head_dash,
    head_name,
    rgba,
    themed,
)

LEVELS = 8
MAX_TOKENS = 160
ROW_PX = 22  # the spacing of token rows while the figure fits MAX_HEIGHT
MAX_HEIGHT = 900


def head_view(layer_weights, query_tokens: Sequence[str], key_tokens: Sequence[str], *,
              heads: Sequence[int], focus: int | None = None, min_weight: float = 0.02,
              title: str = "", left_title: str | None = None,
              right_title: str | None = None,
              query_hover: Sequence[str] | None = None,
              key_hover: Sequence[str] | None = None) -> go.Figure:
    """Token-to-token lines for the chosen heads of one layer.

    Args:
        layer_weights: ``[head, query, key]``.
        query_tokens, key_tokens: labels of the left and right columns.
        heads: which heads to draw (each in its colour).
        focus: a query index whose lines alone are drawn (None: every query).
        min_weight: lighter lines are left out.
        title, left_title, right_title: titles (the columns' default "query" and "key").
        query_hover, key_hover: what hovering a token of the left or right column says
            (default: the token and its position among the tokens drawn).

    Returns:
        a figure: per head a legend entry (``meta`` = ``{"head": h}``, no points) and up to
        ``LEVELS`` line traces (``name`` = ``head h``, ``meta`` = ``{"head": h, "weight":
        level}``), then the two token columns.
    """
    w = np.asarray(layer_weights, dtype=np.float64)
    if w.ndim != 3 or w.shape[1:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights of shape {w.shape} do not match {len(query_tokens)} query and "
                         f"{len(key_tokens)} key tokens")
    n_q, n_k = w.shape[1:]
    if max(n_q, n_k) > MAX_TOKENS:
        raise ValueError(f"the head view draws at most {MAX_TOKENS} tokens a side; choose a "
                         f"window of the input")
    for h in heads:
        if not 0 <= h < w.shape[0]:
            raise ValueError(f"head {h} is out of range 0..{w.shape[0] - 1}")
    if focus is not None and not 0 <= focus < n_q:
        raise ValueError(f"focus {focus} is out of range 0..{n_q - 1}")
    left_title = _("query") if left_title is None else left_title
    right_title = _("key") if right_title is None else right_title
    y_q = np.arange(n_q)
    y_k = np.arange(n_k) * ((n_q - 1) / (n_k - 1) if n_k > 1 and n_q > 1 else 1.0)
    fig = go.Figure()
    queries = [focus] if focus is not None else range(n_q)
    for h in heads:
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="lines", name=head_name(h), legendgroup=f"head {h}",
            meta={"head": h}, hoverinfo="skip",
            line={"color": head_color(h), "width": 3, "dash": head_dash(h)}))
        level = np.minimum((w[h] * LEVELS).astype(int), LEVELS - 1)  # [query, key]
        for lv in range(LEVELS):
            xs, ys = [], []
            for q in queries:
                for k in np.flatnonzero((level[q] == lv) & (w[h, q] >= min_weight)):
                    xs += [0, 1, None]
                    ys += [y_q[q], y_k[k], None]
            if xs:
                fig.add_trace(go.Scatter(
                    x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                    name=head_name(h), legendgroup=f"head {h}", meta={"head": h, "weight": lv},
                    line={"color": rgba(head_color(h), (lv + 1) / LEVELS), "width": 2,
                          "dash": head_dash(h)}))
    rows = max(n_q, n_k)
    height = max(300, min(MAX_HEIGHT, 90 + ROW_PX * rows))
    # label every k-th token when the rows crowd
    every = max(1, int(np.ceil(rows / labels_that_fit(height - 90))))
    columns = ((0, y_q, query_tokens, query_hover, "left"),
               (1, y_k, key_tokens, key_hover, "right"))
    for x, y, tokens, hover, side in columns:
        if hover is not None and len(hover) != len(tokens):
            raise ValueError(f"{len(hover)} hovers for {len(tokens)} {side} tokens")
        labels = escape(tokens)
        shown = [label if i % every == 0 else "" for i, label in enumerate(labels)]
        fig.add_trace(go.Scatter(
            x=[x] * len(tokens), y=y, mode="markers+text", text=shown,
            hovertext=escape(hover) if hover is not None else [
                f"{i}: {label}" for i, label in enumerate(labels)],
            textposition="middle left" if side == "left" else "middle right",
            marker={"size": TOKEN_MARKER_SIZE, "color": TOKEN_MARKER_COLOR}, showlegend=False,
            name=f"{side} tokens",
            customdata=np.arange(len(tokens)),
            hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(
        title=title, height=height, showlegend=True,
        margin={"l": 20, "r": 20, "t": 90, "b": 20},
        # above the column titles, right of the figure's title
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.05, "yanchor": "bottom"},
        clickmode="event+select")
    fig.update_xaxes(range=[-0.8, 1.8], visible=False)
    fig.update_yaxes(range=[max(n_q, n_k), -1], visible=False)
    fig.add_annotation(x=0, y=-1, text=f"<b>{left_title}</b>", showarrow=False, yshift=10)
    fig.add_annotation(x=1, y=-1, text=f"<b>{right_title}</b>", showarrow=False, yshift=10)
    return themed(fig)
