"""The "What moves" view's figures: one head's rows by a method with each row's largest key
marked (and rows where it differs from the raw weights' highlighted), heads ranked by what
leaving each out changes, and a head's queries and keys in one map."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.heatmap import attention_heatmap
from viz.style import HIGHLIGHT_COLOR, themed

QUERY_COLOUR, KEY_COLOUR = "#1f77b4", "#d62728"


def method_heatmap(matrix: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                   *, largest: np.ndarray, differs: np.ndarray,
                   allowed: np.ndarray | None = None, title: str = "",
                   y_title: str | None = None, query_hover: Sequence[str] | None = None,
                   special: tuple[Sequence[int], Sequence[int]] = ((), ()),
                   scale_title: str | None = None) -> go.Figure:
    """``matrix [query, key]`` (rows summing to 1) as a heatmap on the 0–1 scale; each row
    ``differs`` marks (its ``largest`` key is not the raw weights') has that cell outlined in
    orange, and the title counts those rows.

    Returns:
        the figure; each outline is a layout shape (``name`` ``"differs"``).
    """
    own, differs = np.asarray(largest), np.asarray(differs, bool)
    if differs.any():
        title += "<br><sup>" + _("{count} of {total} rows: the largest key differs from the raw "
                                 "weights' (outlined)").format(count=int(differs.sum()),
                                                               total=len(differs)) + "</sup>"
    fig = attention_heatmap(matrix, query_tokens, key_tokens, allowed=allowed, title=title,
                            y_title=y_title, query_hover=query_hover, special=special)
    if scale_title is not None:
        fig.update_layout(coloraxis_colorbar_title_text=scale_title)
    for row in np.flatnonzero(differs):  # (What moves reads texts drawn cell by cell)
        fig.add_shape(type="rect", x0=own[row] - 0.5, x1=own[row] + 0.5, y0=row - 0.5,
                      y1=row + 0.5, line={"color": HIGHLIGHT_COLOR, "width": 4}, name="differs")
    return fig


def ablation_bars(heads: Sequence[int], changes: Sequence[float], *, measure: str,
                  changed: Sequence[bool] = ()) -> go.Figure:
    """Each head's change when it alone is left out, largest first (heads whose output text
    changed drawn orange)."""
    changed = list(changed) or [False] * len(heads)
    fig = go.Figure(go.Bar(
        x=[str(h) for h in heads], y=list(changes),
        marker_color=[HIGHLIGHT_COLOR if c else QUERY_COLOUR for c in changed],
        text=[f"{c:.2g}" for c in changes], textposition="outside", cliponaxis=False,
        hovertemplate=_("head {head}").format(head="%{x}") + ": %{y:.4g}<extra></extra>"))
    top = max(changes) if len(changes) else 1.0
    fig.update_layout(height=380, margin={"l": 70, "r": 20, "t": 40, "b": 60},
                      title=_("Each head left out alone: {measure}").format(measure=measure))
    fig.update_yaxes(title_text=_("change"), range=[0, top * 1.2 if top > 0 else 1])
    fig.update_xaxes(title_text=_("Head"), type="category")
    return themed(fig)


def qk_scatter(points: np.ndarray, n_queries: int, query_tokens: Sequence[str],
               key_tokens: Sequence[str], *, title: str = "") -> go.Figure:
    """A head's queries (circles) and keys (diamonds) in one 2-D map; hovering names the token;
    each point's ``customdata`` is ``[is_key, position]``."""
    q, k = points[:n_queries], points[n_queries:]
    fig = go.Figure()
    for name, pts, tokens, symbol, colour, is_key in (
            (_("queries"), q, query_tokens, "circle", QUERY_COLOUR, 0),
            (_("keys"), k, key_tokens, "diamond", KEY_COLOUR, 1)):
        fig.add_trace(go.Scatter(
            x=pts[:, 0], y=pts[:, 1], mode="markers+text", name=name,
            text=list(tokens), textposition="top center", textfont={"size": 13},
            customdata=[[is_key, i] for i in range(len(pts))],
            marker={"symbol": symbol, "size": 11, "color": colour, "opacity": 0.85},
            hovertemplate="%{text}<extra>" + name + "</extra>"))
    fig.update_layout(title=title, height=560, margin={"l": 40, "r": 20, "t": 60, "b": 40},
                      legend={"orientation": "h", "y": -0.08}, clickmode="event+select")
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False, scaleanchor="x")
    return themed(fig)
