"""Two attention patterns compared: the difference of two heads whose tokens line up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _

from .labels import axis_ticks, escape
from .style import DIVERGING_SCALE, themed


def paired_labels(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """One label per position of two token lists of equal length: the token, or ``a → b``
    where they differ."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} and {len(second)} tokens do not line up")
    return [a if a == b else f"{a} → {b}" for a, b in zip(first, second)]


def difference_heatmap(difference, query_labels: Sequence[str], key_labels: Sequence[str], *,
                       title: str = "", subtitle: str = "") -> go.Figure:
    """``second − first`` of two heads' weights, ``[query, key]``: red where the second
    sentence (or model) attends more, blue where less, white where nothing changed; the
    colour scale is symmetric about 0 and at least ±0.1 wide, so noise stays pale.

    Args:
        difference: ``[query, key]`` differences of weights (each in -1..1).
        query_labels, key_labels: the rows' and columns' labels (see :func:`paired_labels`).
    """
    difference = np.asarray(difference, dtype=float)
    if difference.shape != (len(query_labels), len(key_labels)):
        raise ValueError(f"a {difference.shape} difference for {len(query_labels)} × "
                         f"{len(key_labels)} labels")
    rows, cols = escape(query_labels), escape(key_labels)
    top = max(0.1, float(np.nanmax(np.abs(difference))) if difference.size else 0.1)
    hover = np.array([[f"{q} → {k}" for k in cols] for q in rows], dtype=object)
    fig = go.Figure(go.Heatmap(
        z=difference, x=list(range(len(cols))), y=list(range(len(rows))), customdata=hover,
        colorscale=DIVERGING_SCALE, reversescale=True, zmid=0, zmin=-top, zmax=top,
        colorbar={"title": {"text": _("difference")}},
        hovertemplate="%{customdata}<br>" + _("difference") + " %{z:+.3f}<extra></extra>",
        xgap=1, ygap=1))
    heading = f"{title}<br><sup>{subtitle}</sup>" if subtitle else title
    fig.update_layout(title={"text": heading}, height=max(360, 160 + 26 * len(rows)),
                      margin={"t": 100})
    fig.update_xaxes(title_text=_("key (attended to)"), side="bottom", tickangle=-45,
                     **axis_ticks(list(key_labels)))
    fig.update_yaxes(title_text=_("query (attending)"), autorange="reversed",
                     **axis_ticks(list(query_labels)))
    return themed(fig)
