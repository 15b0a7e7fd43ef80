"""Figures of the lesson §3.4 "Who looks at whom": one pair's weight in every head of the
own translator.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.heatmap import HIGHLIGHT_WIDTH
from viz.labels import axis_ticks, escape
from viz.style import (
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    TRANSPARENT,
    WEIGHT_SCALE,
    themed,
)


def pair_grid(grids: Sequence[np.ndarray], labels: Sequence[str],
              best: Sequence[tuple[int, int]], *, title: str = "") -> go.Figure:
    """Each pair's weight in every layer and head, the largest outlined.

    Args:
        grids: per pair, ``[layer, head]`` weights (pairs of different kinds may have
            different layer counts; missing cells stay empty).
        labels: one row label per pair (``"sat → cat"``).
        best: per pair, the ``(layer, head)`` outlined (the first of those as large as its
            largest: :func:`model.lessons.see_it.find_pair`).
        title: the figure's title.

    Returns:
        one heatmap, rows the pairs, columns ``layer · head``, each value written in its cell.
    """
    if not (len(grids) == len(labels) == len(best)) or not grids:
        raise ValueError("one grid, label and best head per pair")
    n_layers = max(np.shape(g)[0] for g in grids)
    n_heads = max(np.shape(g)[1] for g in grids)
    z = np.full((len(grids), n_layers * n_heads), np.nan)
    for row, grid in enumerate(grids):
        grid = np.asarray(grid, dtype=float)
        z[row, :grid.size] = grid.reshape(-1)  # [layer, head] -> layer · head
    columns = [f"{layer}·{head}" for layer in range(n_layers) for head in range(n_heads)]
    customdata = np.empty(z.shape + (2,), dtype=object)
    customdata[..., 0] = np.array(escape(labels), dtype=object)[:, None]
    customdata[..., 1] = np.array(columns, dtype=object)[None, :]
    fig = go.Figure(go.Heatmap(
        # three decimals: heads as large as the row's largest (model.lessons.see_it.TIE) write
        # the same number, and one just below it does not (0.996 against 1.000)
        z=z, customdata=customdata, coloraxis="coloraxis", texttemplate="%{z:.3f}",
        hoverongaps=False, xgap=1, ygap=1,  # values at the figure's font size
        hovertemplate=_("%{customdata[0]}<br>layer · head %{customdata[1]}<br>"
                        "weight %{z:.4f}<extra></extra>")))
    for row, (layer, head) in enumerate(best):
        col = layer * n_heads + head
        fig.add_shape(type="rect", x0=col - 0.5, x1=col + 0.5, y0=row - 0.5, y1=row + 0.5,
                      line={"color": HIGHLIGHT_COLOR, "width": HIGHLIGHT_WIDTH},
                      fillcolor=TRANSPARENT, layer="above")
    for layer in range(1, n_layers):  # a thin rule between layers
        fig.add_vline(x=layer * n_heads - 0.5, line={"color": GUIDE_COLOR, "width": 2})
    fig.update_layout(
        title=title, height=140 + 48 * len(grids), margin={"l": 110, "r": 30, "t": 60, "b": 60},
        coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                   "colorbar": {"title": {"text": _("weight")}}})
    fig.update_xaxes(title_text=_("layer · head"), showgrid=False, zeroline=False,
                     **axis_ticks(columns))
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False,
                     **axis_ticks(list(labels)))
    return themed(fig)
