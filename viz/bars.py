"""Bar charts: one query's attention over its keys, and a next-token distribution."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import axis_ticks, escape
from viz.style import BAR_COLOR, GRID_COLOR, HIGHLIGHT_COLOR, themed


def distribution_bars(values, labels: Sequence[str], *, highlight: int | None = None,
                      title: str = "", value_name: str | None = None) -> go.Figure:
    """Horizontal bars, one per label, first label on top.

    Labels sit at integer positions, so repeated labels (two "the") stay separate bars.

    Args:
        values: ``[n]`` numbers in 0..1 (attention weights or probabilities).
        labels: ``n`` labels.
        highlight: index of a bar drawn in the highlight colour (the chosen token).
        title: the figure's title.
        value_name: what the values are, for the axis and hover (default "weight").

    Returns:
        a figure with one ``go.Bar`` trace whose ``x`` are the values.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) != len(labels):
        raise ValueError(f"{values.shape} values do not match {len(labels)} labels")
    if highlight is not None and not 0 <= highlight < len(labels):
        raise ValueError(f"highlight {highlight} is out of range 0..{len(labels) - 1}")
    if value_name is None:
        value_name = _("weight")
    colors = [HIGHLIGHT_COLOR if i == highlight else BAR_COLOR for i in range(len(labels))]
    fig = go.Figure(go.Bar(
        x=values, y=list(range(len(labels))), orientation="h", marker_color=colors,
        customdata=escape(labels), text=[f"{v:.2f}" for v in values], textposition="outside",
        cliponaxis=False,
        hovertemplate=f"%{{customdata}}<br>{value_name} %{{x:.4f}}<extra></extra>"))
    fig.update_layout(title=title, height=max(220, 90 + 28 * len(labels)),
                      margin={"l": 90, "r": 40, "t": 50 if title else 20, "b": 40},
                      bargap=0.25)
    fig.update_xaxes(range=[0, 1.1], title_text=value_name, showgrid=True, gridcolor=GRID_COLOR)
    fig.update_yaxes(autorange="reversed", **axis_ticks(labels))
    return themed(fig)
