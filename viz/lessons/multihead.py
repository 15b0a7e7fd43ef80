"""Figures of the lesson §4.6: one layer's heads from the split to W_O (the stages with
their real shapes, the concatenation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _
from viz.labels import LINE, text_width, wrap
from viz.lessons.layout import BORDER, FILLS, arrow, symmetric
from viz.sizes import SCREEN_CHART_PX, SMALL_PROJECTOR_CHART_PX
from viz.style import (
    BAR_COLOR,
    GRID_COLOR,
    GUIDE_COLOR,
    head_color,
    head_name,
    themed,
)

FLOOR_PX = 18  # presentation mode's least text (viz.present.FLOOR_PX)

# The stages of one multi-head attention module, with how the seed writes their shapes.
HEAD_STAGES = (
    ("input", N_("input x"), "(B, L, d_model)"),
    ("q", N_("W<sub>Q</sub>, W<sub>K</sub>, W<sub>V</sub>, then split into heads"),
     "(B, h, L, d_head)"),
    ("pattern", N_("each head's weights"), "(B, h, L<sub>q</sub>, L<sub>k</sub>)"),
    ("z", N_("each head: weights · V"), "(B, h, L, d_head)"),
    ("concat", N_("heads concatenated"), "(B, L, h·d_head)"),
    ("output", N_("W<sub>O</sub> mixes them back"), "(B, L, d_model)"),
)


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


ROWS_OF = (6, 3, 2)  # stages a row holds, fewest rows first (the layouts that look even)
BOX_PX = 110  # the tallest a stage's box is drawn


def heads_flow(shapes: Mapping[str, Sequence[int]], n_heads: int, *, shown: int | None = None,
               title: str = "", font_size: int = 14, width_px: float | None = None
               ) -> go.Figure:
    """The path of one multi-head attention module as boxes left to right, each with the
    seed's symbolic shape and the real one of this run; the split stages draw one stripe per
    head in its colour. A chart too narrow for six boxes side by side gets rows of three (or
    two), joined by an arrow; the stages' names are wrapped to their boxes.

    Args:
        shapes: stage -> real shape (the stages of :data:`HEAD_STAGES`).
        n_heads: heads in the layer.
        shown: how many stages to draw (the rest left empty, for a step-by-step reveal).
        title: the figure's title.
        font_size: the stages' text (larger for a projector).
        width_px: the chart's width the text is fitted to (default: a 1024 px screen's, or
            for text of 18 px and more, presentation mode's, the narrowest projector's).

    Returns:
        a figure of shapes and annotations.
    """
    shown = len(HEAD_STAGES) if shown is None else max(1, min(shown, len(HEAD_STAGES)))
    if width_px is None:
        width_px = SMALL_PROJECTOR_CHART_PX if font_size >= FLOOR_PX else SCREEN_CHART_PX
    width, gap = 14.0, 3.2
    texts = [(_(label), symbolic, _shape_text(shapes[stage]) if stage in shapes else None)
             for stage, label, symbolic in HEAD_STAGES]
    widest = max(text_width(line, font_size) for _label, *lines in texts for line in lines
                 if line)
    plot_px = width_px - 20
    for per_row in ROWS_OF:  # the most boxes a row holds with every shape on one line
        unit = plot_px / (per_row * (width + gap) + 2 * gap)
        if widest <= (width + 0.8 * gap) * unit:
            break
    rows = -(-len(HEAD_STAGES) // per_row)
    room = (width + 0.8 * gap) * unit  # px a stage's text may take
    blocks = []
    for label, symbolic, real in texts:
        lines = [f"<b>{piece}</b>" for piece in wrap(label, font_size, room)] + [symbolic]
        blocks.append(lines + ([f"<b>{real}</b>"] if real else []))
    tall = min(unit, BOX_PX / 8)  # px a unit of height: boxes at most BOX_PX tall
    text_units = max(len(b) for b in blocks) * font_size * LINE / tall + 0.8
    pitch = 8 + text_units + 2.4  # a row: its text, its boxes and the way down to the next
    fig = go.Figure()
    centre = []
    for i, ((stage, _label, _symbolic), lines) in enumerate(zip(HEAD_STAGES, blocks)):
        row, col = divmod(i, per_row)
        x0, y0 = col * (width + gap), -row * pitch
        centre.append((x0, y0 + 4))
        if i >= shown:
            continue
        if stage in ("q", "pattern", "z"):
            for h in range(n_heads):
                bottom = y0 + h * 8 / n_heads
                fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=bottom,
                              y1=bottom + 8 / n_heads, fillcolor=head_color(h), opacity=0.55,
                              line={"color": BORDER, "width": 0.6})
        else:
            fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=y0, y1=y0 + 8,
                          fillcolor=FILLS["attention"] if stage != "concat" else FILLS["norm"],
                          line={"color": BORDER, "width": 1})
        fig.add_annotation(x=x0 + width / 2, y=y0 + 8.6, text="<br>".join(lines),
                           showarrow=False, yanchor="bottom", font={"size": font_size})
        if not i:
            continue
        (px, py), (x, y) = centre[i - 1], centre[i]
        if col:
            arrow(fig, px + width + 0.2, y, x - 0.2, y)
        else:  # down from the end of the row above, and into the first box of this one
            down = py - 4 - 1.2
            fig.add_shape(type="path", path=(f"M {px + width + 0.2},{py} H {px + width + gap / 2}"
                                             f" V {down} H {x - gap / 2} V {y}"),
                          line={"color": GUIDE_COLOR, "width": 1.6})
            arrow(fig, x - gap / 2, y, x - 0.2, y)
    top = 8 + text_units
    height = (top + (rows - 1) * pitch + 1) * tall
    margin_t = 50 if title else 10
    fig.update_layout(title=title, height=height + margin_t + 10, showlegend=False,
                      dragmode=False, margin={"l": 10, "r": 10, "t": margin_t, "b": 10})
    right = per_row * (width + gap) - gap
    fig.update_xaxes(range=[-gap, right + gap], visible=False, fixedrange=True)
    fig.update_yaxes(range=[-(rows - 1) * pitch - 1, top], visible=False, fixedrange=True)
    return themed(fig)


def concat_bars(concat_row, output_row, n_heads: int, *, title: str = "") -> go.Figure:
    """One token's concatenation of the heads (each head's d_head numbers in its colour) above
    what W_O makes of it.

    Args:
        concat_row: ``[d_model]`` W_O's input for the token; ``output_row``: ``[d_model]``
            the module's output.
        n_heads: heads (the concatenation holds ``d_model / n_heads`` numbers of each).
        title: the figure's title.

    Returns:
        a figure with two ``go.Bar`` traces (named "concat" and "output").
    """
    concat_row = np.asarray(concat_row, dtype=float)
    output_row = np.asarray(output_row, dtype=float)
    d_model = concat_row.size
    if output_row.shape != (d_model,) or d_model % n_heads:
        raise ValueError(f"{concat_row.shape} and {output_row.shape} for {n_heads} heads")
    d_head = d_model // n_heads
    dims = np.arange(d_model)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.2,
                        subplot_titles=[
                            _("concatenation: head 0's {d_head} numbers, then head 1's, …")
                            .format(d_head=d_head),
                            _("after W<sub>O</sub>: every number mixes every head")])
    fig.add_trace(go.Bar(x=dims, y=concat_row, name="concat",
                         marker_color=[head_color(i // d_head) for i in dims],
                         customdata=[head_name(i // d_head) for i in dims],
                         hovertemplate=_("dimension %{x} (%{customdata}): %{y:.3f}")
                         + "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=dims, y=output_row, name="output", marker_color=BAR_COLOR,
                         hovertemplate=_("dimension %{x}: %{y:.3f}") + "<extra></extra>"),
                  row=2, col=1)
    for h in range(1, n_heads):
        fig.add_vline(x=h * d_head - 0.5, line_dash="dot", line_color=GUIDE_COLOR, row=1, col=1)
    top = symmetric(concat_row)
    for h in range(n_heads):
        fig.add_annotation(x=(h + 0.5) * d_head - 0.5, y=top * 1.15, xref="x", yref="y",
                           text=head_name(h), showarrow=False,
                           font={"color": head_color(h), "size": 13})
    fig.update_yaxes(range=[-top * 1.3, top * 1.35], gridcolor=GRID_COLOR, row=1, col=1)
    fig.update_yaxes(gridcolor=GRID_COLOR, row=2, col=1)
    fig.update_xaxes(title_text=_("dimension (d_model = {d})").format(d=d_model), row=2, col=1)
    fig.update_layout(title=title, showlegend=False, height=480, bargap=0.05,
                      margin={"l": 60, "r": 20, "t": 80 if title else 50, "b": 50})
    return themed(fig)
