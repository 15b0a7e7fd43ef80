"""Figures restyled for a projector, and the colour-blind-safe palettes.

Applied to a finished figure (any builder's), so that every view gets the same treatment:

- fonts large enough to read from the back of a room at 1920×1080: titles 26 px, tick labels
  18 px, axis titles 22 px, colour bars, legends and hovers 18 px;
- token labels horizontal when they fit side by side (Chinese labels especially, which are
  unreadable slanted), else slanted, and thinned to every k-th where even slanted ones would
  overlap at the larger size;
- the value written in each cell of small heatmaps (up to ``CELL_VALUES_UP_TO`` tokens a side);
- taller figures, so that the larger labels keep their rows.

The palette swap replaces the weights' colour scale (blue, :data:`viz.style.WEIGHT_SCALE`) with
a colour-blind-safe one; it applies with or without presentation mode.
"""

from __future__ import annotations

import math
import re
import unicodedata

import numpy as np
import plotly.graph_objects as go

from viz.sizes import PROJECTOR_PLOT_PX
from viz.style import WEIGHT_SCALE

TITLE_PX = 26
TICK_PX = 18
AXIS_TITLE_PX = 22
TEXT_PX = 18
CELL_PX = 16
CELL_VALUES_UP_TO = 12
# What a cell holds, widest first, with the widest number of each (scores run to -99.99)
CELL_FORMATS = (("%{z:.2f}", CELL_PX), ("%{z:.1f}", CELL_PX - 2))
NUMBER_SAMPLE = {"%{z:.2f}": "-00.00", "%{z:.1f}": "-00.0"}
MAX_MATRICES = 4  # the mask view's panels; more (a grid of heads) would be a wall of numbers
LINE = 1.5  # the room one label's line needs, in font sizes
SLANT = -45
PALETTES = {"default": None, "cividis": "Cividis", "viridis": "Viridis"}
_TAGS = re.compile(r"<[^>]+>")
_SUP = re.compile(r"<sup>(.*?)</sup>", re.DOTALL)


def text_width(label: str, font_px: float) -> float:
    """The width of ``label`` in pixels at ``font_px``: wide (CJK) characters one font size,
    others about 0.6; markup left out."""
    text = _TAGS.sub("", str(label))
    return font_px * sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in text)


def _axis_length(layout: go.Layout, axis_name: str, width_px: float, height_px: float) -> float:
    axis = layout[axis_name]
    lo, hi = axis.domain if axis.domain is not None else (0, 1)
    if axis_name.startswith("x"):
        return (hi - lo) * width_px
    return (hi - lo) * height_px


def _fit_ticks(axis, length: float, horizontal_axis: bool) -> dict:
    """New settings for an axis with token labels (``tickvals``/``ticktext``): horizontal
    when they fit, else slanted (x) and thinned to every k-th so none overlap."""
    values, texts = list(axis.tickvals or ()), list(axis.ticktext or ())
    if not texts or axis.showticklabels is False:
        return {}
    update = {}
    per_line = TICK_PX * LINE
    if horizontal_axis:
        widest = max(text_width(t, TICK_PX) for t in texts) + TICK_PX
        if widest * len(texts) <= length:
            return {"tickangle": 0}
        update["tickangle"] = SLANT
        per_label = per_line / math.sin(math.radians(-SLANT))
    else:
        per_label = per_line
    step = max(1, math.ceil(per_label * len(texts) / max(length, 1)))
    if step > 1:
        update.update(tickvals=values[::step], ticktext=texts[::step])
    return update


def _shape(z) -> tuple[int, ...]:
    """The shape of a heatmap's ``z``: a nested list, an array, or Plotly's typed-array dict
    (``{"dtype", "bdata", "shape"}``) of a figure rebuilt from its JSON."""
    if isinstance(z, dict):
        return tuple(int(n) for n in str(z.get("shape", "0")).split(","))
    return np.shape(z)


def _cell_values(figure: go.Figure, limit: int, width_px: float) -> None:
    """Write each cell's value in the heatmaps of a figure showing a few small matrices, as
    many digits as a cell's width holds (masked cells, NaN, stay empty); a grid of many
    (every head of every layer), or cells too narrow for a number, stay without."""
    matrices = [trace for trace in figure.data
                if isinstance(trace, go.Heatmap) and trace.z is not None
                and not trace.texttemplate
                # a flat layer (the mask's grey, −∞) holds no values
                and not (trace.showscale is False and trace.coloraxis is None)]
    if not matrices or len(matrices) > MAX_MATRICES:
        return
    for trace in matrices:
        shape = _shape(trace.z)
        if len(shape) != 2 or not (0 < shape[0] <= limit and 0 < shape[1] <= limit):
            continue
        axis = figure.layout["xaxis" + (trace.xaxis or "x").removeprefix("x")]
        lo, hi = axis.domain if axis.domain is not None else (0, 1)
        cell = (hi - lo) * width_px / shape[1]
        for template, size in CELL_FORMATS:
            if cell >= text_width(NUMBER_SAMPLE[template], size) + size / 2:
                trace.update(texttemplate=template, textfont={"size": size})
                break


def for_projector(figure: go.Figure | dict, *, width_px: float = PROJECTOR_PLOT_PX,
                  cell_values_up_to: int = CELL_VALUES_UP_TO) -> go.Figure:
    """A copy of ``figure`` restyled for a projector (see the module's description).

    Args:
        width_px: the width the chart's plot area is drawn at (a chart in one of two
            columns gets about half).
        cell_values_up_to: small heatmaps, up to this many rows and columns, get their values
            written in their cells.
    """
    fig = go.Figure(figure)
    layout = fig.layout
    scale = 1.35
    height = (layout.height or 450) * scale
    fig.update_layout(
        height=height, font={"size": TEXT_PX}, hoverlabel={"font": {"size": TEXT_PX}},
        legend={"font": {"size": TEXT_PX}},
        title={"font": {"size": TITLE_PX}})
    # titles over subplots (placed on the paper) grow; marks written in cells (−∞, ✓) keep
    # the size their cells hold
    fig.update_annotations(font_size=max(TEXT_PX, 20), selector={"xref": "paper"})
    if layout.title.text and "<sup>" in layout.title.text:
        # a subtitle set as <sup> is raised by a share of the title's size: at projector
        # size it runs into the line above, so it becomes a smaller line of its own
        layout.title.text = _SUP.sub(rf"<span style='font-size:{TEXT_PX}px'>\1</span>",
                                     layout.title.text)
    if layout.coloraxis is not None and layout.coloraxis.colorbar is not None:
        fig.update_coloraxes(colorbar={"tickfont": {"size": TEXT_PX},
                                       "title": {"font": {"size": TEXT_PX}}})
    for trace in fig.data:
        if getattr(trace, "colorbar", None) is not None and "colorbar" in trace:
            trace.update(colorbar={"tickfont": {"size": TEXT_PX}})
    margin = layout.margin
    plot_height = height - ((margin.t or 80) + (margin.b or 80)) * scale
    for axis_name in [key for key in layout.to_plotly_json() if re.match(r"[xy]axis\d*$", key)]:
        axis = layout[axis_name]
        length = _axis_length(layout, axis_name, width_px, plot_height)
        update = {"tickfont": {"size": TICK_PX}, "title": {"font": {"size": AXIS_TITLE_PX}},
                  "automargin": True}
        update.update(_fit_ticks(axis, length, axis_name.startswith("x")))
        if axis.type == "log" and axis.dtick is None:  # its 2s and 5s would run into each other
            update["dtick"] = 1  # one label a decade
        axis.update(update)
    _cell_values(fig, cell_values_up_to, width_px)
    return fig


def with_palette(figure: go.Figure | dict, palette: str) -> go.Figure | dict:
    """``figure`` with its weights' colour scale (Blues) replaced by ``palette`` (a key of
    :data:`PALETTES`); unchanged for the default palette."""
    scale = PALETTES.get(palette)
    if scale is None:
        return figure
    fig = go.Figure(figure)

    def blue(colorscale) -> bool:
        # Plotly stores a named scale as its list of colours: compare with Blues' own list
        return colorscale is not None and tuple(map(tuple, colorscale)) == _BLUES

    for coloraxis in [key for key in fig.layout.to_plotly_json() if key.startswith("coloraxis")]:
        if blue(fig.layout[coloraxis].colorscale):
            fig.layout[coloraxis].colorscale = scale
    for trace in fig.data:
        if blue(getattr(trace, "colorscale", None)):
            trace.colorscale = scale
    return fig


_BLUES = tuple(map(tuple, go.Heatmap(colorscale=WEIGHT_SCALE).colorscale))
