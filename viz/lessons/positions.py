"""Figures of the lesson §3.4 "Why positions": a sentence and its shuffle side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import _
from viz.labels import axis_ticks, check_weights, escape
from viz.style import (
    GUIDE_COLOR,
    WEIGHT_SCALE,
    themed,
)

# |change|: white where nothing changed, then oranges (not the weights' blues)
DIFFERENCE_SCALE = [[0.0, "#ffffff"], [0.5, "#fdae6b"], [1.0, "#a63603"]]


def _hover(query_tokens: Sequence[str], key_tokens: Sequence[str]) -> np.ndarray:
    """``[query, key, 2]``: ``"i: token"`` of each cell's query and key."""
    grid = np.empty((len(query_tokens), len(key_tokens), 2), dtype=object)
    grid[..., 0] = np.array([f"{i}: {t}" for i, t in enumerate(escape(query_tokens))],
                            dtype=object)[:, None]
    grid[..., 1] = np.array([f"{j}: {t}" for j, t in enumerate(escape(key_tokens))],
                            dtype=object)[None, :]
    return grid


def order_panels(original, shuffled, difference, words: Sequence[str],
                 shuffled_words: Sequence[str], *, title: str = "") -> go.Figure:
    """One head for a sentence, for its shuffled words, and how much the shuffled run differs
    from the original one moved to the shuffled order.

    Args:
        original: ``[query, key]`` weights of the sentence as written (rows and columns in
            ``words``' order).
        shuffled: ``[query, key]`` weights of the shuffled sentence (``shuffled_words``' order).
        difference: ``[query, key]``, ``|shuffled − original reordered|`` in the shuffled
            order (panel ③, "difference": the page says how it is computed).
        words, shuffled_words: the tokens in each order.
        title: the figure's title.

    Returns:
        three heatmaps: the two weight panels share the weights' colour axis (0 to 1), the
        difference has its own (0 to 1, white where nothing changed).
    """
    original = check_weights(original, words, words)
    shuffled = check_weights(shuffled, shuffled_words, shuffled_words)
    difference = check_weights(difference, shuffled_words, shuffled_words)
    panels = ((original, words, "coloraxis", _("weight")),
              (shuffled, shuffled_words, "coloraxis", _("weight")),
              (difference, shuffled_words, "coloraxis2", _("difference")))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.1, subplot_titles=[
        _("① original"), _("② shuffled"), _("③ difference")])
    for col, (z, tokens, axis, what) in enumerate(panels, start=1):
        fig.add_trace(go.Heatmap(
            z=z, customdata=_hover(tokens, tokens), coloraxis=axis, name=what,
            hovertemplate=_("query %{customdata[0]}<br>key %{customdata[1]}") + "<br>"
            + what + " %{z:.4f}<extra></extra>"), row=1, col=col)
        ticks = axis_ticks(list(tokens))
        frame = {"showline": True, "mirror": True, "linecolor": GUIDE_COLOR}  # a white panel
        # labels upright where they fit the panel's width, else vertical (slanted ones would
        # run into each other in a narrow panel)
        fig.update_xaxes(autotickangles=[0, -90], showgrid=False, zeroline=False, row=1,
                         col=col, **frame, **ticks)
        fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False, row=1, col=col,
                         title_text=_("query (attending)") if col == 1 else None, **frame,
                         **ticks)
    fig.update_annotations(yshift=6)  # the panels' titles clear their frames
    fig.update_layout(
        title=title, height=420, margin={"l": 90, "r": 30, "t": 90, "b": 80},
        coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                   "colorbar": {"title": {"text": _("weight")}, "x": 1.0, "len": 0.45,
                                "y": 0.78}},
        coloraxis2={"colorscale": DIFFERENCE_SCALE, "cmin": 0, "cmax": 1,
                    "colorbar": {"title": {"text": _("difference")}, "x": 1.0, "len": 0.45,
                                 "y": 0.22}})
    return themed(fig)
