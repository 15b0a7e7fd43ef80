"""Positional encodings (seed 3.4 step 0): the sinusoidal table, its clock hands, similarity,
and RoPE's rotating pairs and its relative-offset property."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.numbers import decade_ticks
from viz.style import (
    DIVERGING_SCALE,
    GRID_COLOR,
    GUIDE_COLOR,
    POINT_MARKER_SIZE,
    SEQUENTIAL_SCALE,
    head_color,
    themed,
)


def sinusoidal_heatmap(table, title: str | None = None) -> go.Figure:
    """``table [position, dimension]`` as a heatmap (−1..1), titled "Sinusoidal table PE(pos,
    dim)" unless ``title`` says otherwise."""
    title = _("Sinusoidal table PE(pos, dim)") if title is None else title
    table = np.asarray(table, dtype=float)
    if table.ndim != 2:
        raise ValueError(f"expected [position, dimension], got shape {table.shape}")
    fig = go.Figure(go.Heatmap(z=table, colorscale=DIVERGING_SCALE, zmin=-1, zmax=1,
                               colorbar={"title": {"text": _("value")}},
                               hovertemplate=_("position %{y}<br>dimension %{x}<br>%{z:.3f}"
                                               "<extra></extra>")))
    fig.update_layout(title=title, height=420, margin={"l": 60, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(title_text=_("dimension (fast ← → slow)"))
    fig.update_yaxes(title_text=_("position"), autorange="reversed")
    return themed(fig)


def clock_hands(table, dims: Sequence[int], title: str | None = None) -> go.Figure:
    """Chosen dimensions of the table as waves over position: low dims turn fast, high slow
    (titled "Fast and slow clock hands" unless ``title`` says otherwise)."""
    title = _("Fast and slow clock hands") if title is None else title
    table = np.asarray(table, dtype=float)
    for d in dims:
        if not 0 <= d < table.shape[1]:
            raise ValueError(f"dimension {d} is out of range 0..{table.shape[1] - 1}")
    fig = go.Figure([go.Scatter(x=np.arange(table.shape[0]), y=table[:, d], mode="lines",
                                name=_("dim {dim}").format(dim=d), line={"color": head_color(i)})
                     for i, d in enumerate(dims)])
    fig.update_layout(title=title, height=360, margin={"l": 60, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(title_text=_("position"), gridcolor=GRID_COLOR)
    fig.update_yaxes(title_text=_("PE value"), range=[-1.1, 1.1], gridcolor=GRID_COLOR)
    return themed(fig)


def similarity_matrix(similarity, title: str, value_name: str | None = None) -> go.Figure:
    """A position × position similarity heatmap (``value_name``, by default "similarity", names
    the colour bar)."""
    value_name = _("similarity") if value_name is None else value_name
    similarity = np.asarray(similarity, dtype=float)
    if similarity.ndim != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {similarity.shape}")
    fig = go.Figure(go.Heatmap(z=similarity, colorscale=SEQUENTIAL_SCALE,
                               colorbar={"title": {"text": value_name}},
                               hovertemplate=_("position %{y} · position %{x}<br>%{z:.3f}"
                                               "<extra></extra>")))
    fig.update_layout(title=title, height=420, margin={"l": 60, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(title_text=_("position"), scaleanchor="y", constrain="domain")
    fig.update_yaxes(title_text=_("position"), autorange="reversed", constrain="domain")
    return themed(fig)


def rope_circles(thetas, n_positions: int, title: str | None = None) -> go.Figure:
    """Where a unit pair (1, 0) lands at positions 0..n-1 for each rotation speed θ.

    Args:
        thetas: radians per position, one per pair shown.
        n_positions: positions drawn.
        title: the figure's title (default "RoPE: one 2-D pair per frequency").
    """
    title = _("RoPE: one 2-D pair per frequency") if title is None else title
    fig = go.Figure()
    circle = np.linspace(0, 2 * np.pi, 200)
    fig.add_trace(go.Scatter(x=np.cos(circle), y=np.sin(circle), mode="lines", hoverinfo="skip",
                             line={"color": GUIDE_COLOR}, showlegend=False))
    positions = np.arange(n_positions)
    for i, theta in enumerate(np.asarray(thetas, dtype=float)):
        radius = 1 - 0.15 * i
        angle = positions * theta
        fig.add_trace(go.Scatter(
            x=radius * np.cos(angle), y=radius * np.sin(angle), mode="lines+markers+text",
            # positions written on the fastest (outer) circle only: slower ones crowd them
            text=[str(p) if p < 8 and i == 0 else "" for p in positions],
            textposition="top center",
            name=_("θ = {theta:.3g} rad/position").format(theta=theta),
            line={"color": head_color(i), "width": 1},
            marker={"size": POINT_MARKER_SIZE}, customdata=positions,
            hovertemplate=_("position %{customdata}<extra>%{fullData.name}</extra>")))
    fig.update_layout(title=title, height=460,
                      margin={"l": 20, "r": 20, "t": 60, "b": 20})
    fig.update_xaxes(range=[-1.2, 1.2], visible=False, scaleanchor="y")
    fig.update_yaxes(range=[-1.2, 1.2], visible=False)
    return themed(fig)


def rope_offsets(scores, title: str | None = None) -> go.Figure:
    """Rotated q·k for query position m (rows) and key position n (columns).

    Equal values along every diagonal show that only m − n matters (the default title, "RoPE:
    q·k depends only on the offset m − n", says so).
    """
    title = _("RoPE: q·k depends only on the offset m − n") if title is None else title
    scores = np.asarray(scores, dtype=float)
    fig = go.Figure(go.Heatmap(z=scores, colorscale=DIVERGING_SCALE, zmid=0,
                               colorbar={"title": {"text": "q·k"}},
                               hovertemplate="m %{y} · n %{x}<br>q·k %{z:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=420, margin={"l": 60, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(title_text=_("key position n"), scaleanchor="y", constrain="domain")
    fig.update_yaxes(title_text=_("query position m"), autorange="reversed", constrain="domain")
    return themed(fig)


def rope_periods(periods, title: str) -> go.Figure:
    """Positions per full turn of each RoPE pair (log scale): the model's clock hands."""
    periods = np.asarray(periods, dtype=float)
    fig = go.Figure(go.Scatter(x=np.arange(len(periods)), y=periods, mode="lines+markers",
                               hovertemplate=_("pair %{x}<br>%{y:.1f} positions per turn"
                                               "<extra></extra>")))
    fig.update_layout(title=title, height=360,
                      margin={"l": 70, "r": 20, "t": 60, "b": 50})
    fig.update_xaxes(title_text=_("pair i (dimensions 2i, 2i+1)"), gridcolor=GRID_COLOR)
    fig.update_yaxes(title_text=_("positions per turn"), type="log", gridcolor=GRID_COLOR,
                     **decade_ticks(periods.min(), periods.max()))
    return themed(fig)
