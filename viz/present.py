"""Figures fitted to where they are shown: a screen (labels that never overlap, titles below the
toolbar) and a projector (presentation mode), and the colour-blind-safe palettes.

Applied to a finished figure (any builder's), so that every view gets the same treatment.
:func:`for_screen` fits a chart's token labels and title to the width a 1024 px screen gives it.
:func:`for_projector` restyles it for a room:

- no text in the figure under 18 px (:data:`FLOOR_PX`): titles 26 px, tick labels 18 px, axis
  titles 22 px, colour bars, legends, annotations, marks and values written in cells, and sub-
  and superscripts, 18 px or more (hovers too);
- token labels horizontal when they fit side by side (Chinese labels especially, which are
  unreadable slanted), else slanted, and thinned to every k-th so that none overlap, fitted to
  the narrower of the two projectors the app is made for (:mod:`viz.sizes`), 1920×1080 and
  1280×720;
- the value written in each cell of small heatmaps (up to ``CELL_VALUES_UP_TO`` tokens a side)
  with as many digits as a cell holds at 1920×1080; where the cells of a 1280 px screen would
  not hold them, the figure says so (``layout.meta["wide_only"]``) and the page hides them
  there (:func:`app_pages.frame.charts.chart`);
- marks written in cells (the mask's ✓, ✗ and −∞: annotations named ``"mark"``) at 18 px or
  more where their cells hold them, left out where they do not;
- taller figures, so that the larger labels keep their rows (a figure laid out for a projector
  already, ``layout.meta["projector"]``, keeps its height).

The palette swap replaces the weights' colour scale (blue, :data:`viz.style.WEIGHT_SCALE`) with
a colour-blind-safe one; it applies with or without presentation mode.
"""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go

from viz.labels import (
    LINE,
    SLANT,
    fit_ticks,
    heatmap_shape,
    label_extent,
    margin,
    plot_box,
    text_width,
    wrap,
)
from viz.sizes import PROJECTOR_CHART_PX, SCREEN_CHART_PX, SMALL_PROJECTOR_CHART_PX
from viz.style import WEIGHT_SCALE

__all__ = ["CELL_VALUES_UP_TO", "FLOOR_PX", "PALETTES", "SLANT", "TICK_PX", "for_projector",
           "for_screen", "text_width", "with_palette"]

FLOOR_PX = 18  # the least any text in a projector's figure is
TITLE_PX = 26
TICK_PX = 18
AXIS_TITLE_PX = 22
TEXT_PX = 18
PANEL_TITLE_PX = 20  # subplot titles
CELL_PX = 18
MARK_PX = (18, 24)  # marks in cells: at least, at most
SCREEN_MARK_PX = (9, 12)  # and on a screen
SCREEN_TITLE_PX, SCREEN_SUBTITLE_PX = 16, 12  # as Streamlit's theme draws a title on a screen
MODEBAR_PX = 32  # the room Plotly's toolbar takes at a chart's top right: its height,
MODEBAR_WIDTH_PX = 170  # and its width (the app's five buttons and Streamlit's own)
CELL_VALUES_UP_TO = 12
# What a cell holds, most digits first; whole numbers only for values of 10 and more.
CELL_FORMATS = (("%{z:.2f}", ".2f"), ("%{z:.1f}", ".1f"), ("%{z:.0f}", ".0f"))
CELL_PAD = 0.25  # room each side of a value in its cell, in font sizes
PAGE_PADDING_PX = 160  # the page's padding around a chart, both sides (Streamlit's wide layout)
MAX_MATRICES = 4  # the mask view's panels; more (a grid of heads) would be a wall of numbers
PALETTES = {"default": None, "cividis": "Cividis", "viridis": "Viridis"}
_SUP = re.compile(r"<sup>(.*?)</sup>", re.DOTALL)
_SUB_SUP = re.compile(r"<(sub|sup)>(.*?)</\1>", re.DOTALL)
_FONT_SIZE = re.compile(r"font-size:\s*(\d+(?:\.\d+)?)px")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _copy(figure: go.Figure | dict) -> go.Figure:
    """A copy to restyle (through its dict: validating a figure's arrays again is slow)."""
    return go.Figure(figure.to_dict() if isinstance(figure, go.Figure) else figure)


def _copy_apart(figure: go.Figure | dict) -> tuple[go.Figure, list[dict]]:
    """A copy to restyle, and its annotations apart as dicts: a mask's hundreds of marks are
    restyled as dicts and set back once (each plotly object they would be costs time)."""
    spec = figure.to_dict() if isinstance(figure, go.Figure) else dict(figure)
    layout = dict(spec.get("layout", {}))
    annotations = [dict(a) for a in layout.pop("annotations", ())]
    return go.Figure({**spec, "layout": layout}), annotations


def _meta(fig: go.Figure) -> dict:
    meta = fig.layout.meta
    return dict(meta) if isinstance(meta, dict) else ({} if meta is None else {"value": meta})


# --- text: floors and wrapped titles -----------------------------------------------------------

def _floored(text: str | None, floor: float = FLOOR_PX) -> str | None:
    """``text`` with no inline size under ``floor`` px: sizes set in its markup raised, and sub-
    and superscripts (which Plotly draws at 70 %) given a size of their own."""
    if not text or "<" not in str(text):
        return text
    text = _FONT_SIZE.sub(lambda m: f"font-size:{max(float(m.group(1)), floor):g}px", str(text))
    return _SUB_SUP.sub(
        lambda m: f"<{m.group(1)}><span style='font-size:{floor:g}px'>{m.group(2)}</span>"
                  f"</{m.group(1)}>", text)


def fit_title(fig: go.Figure, width_px: float, title_px: float, subtitle_px: float,
              floor: float | None = None, annotations: list[dict] | None = None) -> None:
    """Place the title below the toolbar, its subtitles (lines after the first, ``<sup>`` or
    not) as lines of ``subtitle_px`` wrapped to the chart's width, and the top margin to hold
    them (and the labels of an axis on top); ``floor``: the least size of any of its text."""
    layout = fig.layout
    text = layout.title.text if layout.title is not None else None
    top_labels = 0.0
    for name in [k for k in layout.to_plotly_json() if re.fullmatch(r"xaxis\d*", k)]:
        axis = layout[name]
        if axis.side == "top" and axis.showticklabels is not False and axis.ticktext:
            font = (axis.tickfont.size if axis.tickfont is not None else None) or title_px * 0.7
            top_labels = max(top_labels, label_extent(axis.ticktext, font, axis.tickangle)
                             + 10)
    if annotations is None:
        annotations = layout.to_plotly_json().get("annotations", ())
    for annotation in annotations:  # the upper subplots'
        if (annotation.get("xref") == "paper" and annotation.get("yref") == "paper"  # titles
                and (annotation.get("y") or 0) >= 0.999
                and annotation.get("yanchor") == "bottom"):
            size = annotation.get("font", {}).get("size") or title_px * 0.75
            top_labels = max(top_labels, size * LINE + 4)
    if not text:
        if top_labels:
            layout.margin.t = max(margin(layout, "t"), math.ceil(MODEBAR_PX + top_labels))
        return
    room = width_px * 0.92
    first, *rest = _BREAK.split(str(text))
    if _SUP.fullmatch(first.strip()):  # no title: a subtitle alone (a note) stays one
        first, rest = "", [first, *rest]
    # the first line stays clear of the toolbar beside it; the lines below it have the width
    top_line, *more = wrap(first, title_px, room - MODEBAR_WIDTH_PX) if first else [""]
    more = wrap(" ".join(more), title_px, room) if more else []
    lines = ([top_line] if first else []) + [
        f"<span style='font-size:{title_px:g}px'>{piece}</span>" for piece in more]
    sub_lines = 0
    for number, line in enumerate(rest):
        pieces = wrap(_SUP.sub(r"\1", line), subtitle_px, room)
        if not first and not number:  # the top line of a figure without a title stays
            head, *tail = wrap(_SUP.sub(r"\1", line), subtitle_px, room - MODEBAR_WIDTH_PX)
            pieces = [head] + (wrap(" ".join(tail), subtitle_px, room) if tail else [])
        for piece in pieces:  # clear of the toolbar too
            lines.append(f"<span style='font-size:{subtitle_px:g}px;font-weight:normal'>"
                         f"{piece}</span>")
            sub_lines += 1
    if floor is not None:
        lines = [_floored(line, floor) for line in lines]
    title_lines = len(lines) - sub_lines
    height = title_px * LINE * title_lines + subtitle_px * LINE * sub_lines
    layout.title.text = "<br>".join(lines)
    layout.title.font.size = title_px
    total, before = float(layout.height or 450), margin(layout, "t")
    layout.margin.t = max(before, math.ceil(MODEBAR_PX + height + 12 + top_labels))
    layout.height = total + layout.margin.t - before  # the plot keeps its height
    layout.title.update(yref="container", y=1 - MODEBAR_PX / float(layout.height),
                        yanchor="top", automargin=False)


def for_screen(figure: go.Figure | dict, *, width_px: float = SCREEN_CHART_PX) -> go.Figure:
    """A copy of ``figure`` fitted to a chart ``width_px`` wide on a screen (a 1024 px screen
    by default): token labels thinned and slanted so that none overlap, the title and its
    subtitles below the toolbar and wrapped to the width."""
    fig, annotations = _copy_apart(figure)
    fit_ticks(fig, width_px)
    fit_title(fig, width_px, SCREEN_TITLE_PX, SCREEN_SUBTITLE_PX, annotations=annotations)
    if annotations:
        fig.layout.annotations = _marks(fig, annotations, width_px, SCREEN_MARK_PX)
    return fig


# --- values and marks in cells -----------------------------------------------------------------

def _cells(fig: go.Figure, trace, width_px: float) -> tuple[float, float]:
    """The width and height in px of one cell of heatmap ``trace`` at a chart ``width_px``."""
    _, _, _, _, plot_w, plot_h = plot_box(fig, width_px)
    x = fig.layout["xaxis" + (trace.xaxis or "x").removeprefix("x")]
    y = fig.layout["yaxis" + (trace.yaxis or "y").removeprefix("y")]
    rows, cols = heatmap_shape(trace.z)[:2]
    x_lo, x_hi = x.domain if x.domain is not None else (0, 1)
    y_lo, y_hi = y.domain if y.domain is not None else (0, 1)
    return (x_hi - x_lo) * plot_w / max(cols, 1), (y_hi - y_lo) * plot_h / max(rows, 1)


def _numbers(z) -> np.ndarray:
    if isinstance(z, dict):  # a typed array of a figure read back from its JSON
        import base64

        values = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).astype(float)
    else:
        values = np.asarray(z, dtype=float).ravel()
    return values[np.isfinite(values)]


def _value_width(values: np.ndarray, spec: str, font_px: float) -> float:
    """The widest of ``values`` written with ``spec``, in px."""
    if not values.size:
        return 0.0
    lo, hi = float(values.min()), float(values.max())
    return max(text_width(format(v, spec), font_px) for v in (lo, hi))


def _subplot(trace) -> str:
    """A trace's subplot as Plotly names it in the page (``xy``, ``x3y3``)."""
    return (trace.xaxis or "x") + (trace.yaxis or "y")


def _cell_values(fig: go.Figure, limit: int, width_px: float, narrow_px: float,
                 share_px: float) -> None:
    """Write each cell's value in the heatmaps of a figure showing a few small matrices, as
    many digits as a cell's width holds at ``width_px`` (masked cells, NaN, stay empty); a grid
    of many (every head of every layer), or cells too narrow for a number, stay without.
    Values that the cells of a ``narrow_px`` chart would not hold are listed in
    ``meta["wide_only"]`` with the least page width that holds them."""
    matrices = [trace for trace in fig.data
                if isinstance(trace, go.Heatmap) and trace.z is not None
                and not trace.texttemplate and trace.visible is not False
                # a flat layer (the mask's grey, −∞) holds no values
                and not (trace.showscale is False and trace.coloraxis is None)]
    if not matrices or len(matrices) > MAX_MATRICES:
        return
    wide_only = []
    for trace in matrices:
        shape = heatmap_shape(trace.z)
        if len(shape) != 2 or not (0 < shape[0] <= limit and 0 < shape[1] <= limit):
            continue
        values = _numbers(trace.z)
        cell_w, cell_h = _cells(fig, trace, width_px)
        narrow_w, narrow_h = _cells(fig, trace, narrow_px)
        if cell_h < CELL_PX * LINE:
            continue
        for template, spec in CELL_FORMATS:
            if spec == ".0f" and values.size and np.abs(values).max() < 10:
                continue  # weights of 0 and 1 would say nothing
            need = _value_width(values, spec, CELL_PX) + CELL_PAD * CELL_PX * 2
            if cell_w >= need:
                trace.update(texttemplate=template, textfont={"size": CELL_PX})
                if narrow_w < need or narrow_h < CELL_PX * LINE:
                    # the chart width at which the cells hold the values, as a page width
                    chart_px = width_px * need / cell_w
                    wide_only.append({"subplot": _subplot(trace),
                                      "below_px": math.ceil(chart_px / share_px
                                                            + PAGE_PADDING_PX)})
                break
    if wide_only:
        meta = _meta(fig)
        meta["wide_only"] = wide_only
        fig.layout.meta = meta


def _marks(fig: go.Figure, annotations: list[dict], width_px: float,
           sizes: tuple[float, float] = MARK_PX) -> list[dict]:
    """``annotations`` with the marks written in cells (those named ``"mark"``) at ``sizes``
    px (least, most) where every cell of their panel holds them at a chart ``width_px``, and
    without the marks of panels whose cells do not."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for annotation in annotations:
        if annotation.get("name") == "mark":
            groups.setdefault((annotation.get("xref", "x"), annotation.get("yref", "y")),
                              []).append(annotation)
    dropped = set()
    for (xref, yref), marks in groups.items():
        heatmap = next((t for t in fig.data if t.type == "heatmap"
                        and (t.xaxis or "x") == xref and (t.yaxis or "y") == yref), None)
        if heatmap is None:
            continue
        cell_w, cell_h = _cells(fig, heatmap, width_px)
        widest = max(text_width(m.get("text", ""), 1) for m in marks)  # in font sizes
        size = min(sizes[1], (cell_w * 0.8) / max(widest, 0.6), cell_h / LINE)
        if size < sizes[0]:
            dropped.update(id(m) for m in marks)
            continue
        for mark in marks:
            mark["font"] = {**mark.get("font", {}), "size": math.floor(size)}
    return [a for a in annotations if id(a) not in dropped]


# --- the projector -----------------------------------------------------------------------------

def _floor_fonts(fig: go.Figure, annotations: list[dict]) -> None:
    """Every text of the figure at :data:`FLOOR_PX` or more (the larger sizes of the module's
    description for titles, ticks and axis titles)."""
    layout = fig.layout
    fig.update_layout(font={"size": max(TEXT_PX, layout.font.size or 0)},
                      title={"font": {"size": TITLE_PX}},
                      hoverlabel={"font": {"size": TEXT_PX}},
                      legend={"font": {"size": TEXT_PX}, "title": {"font": {"size": TEXT_PX}}})
    for annotation in annotations:
        if annotation.get("name") == "mark":
            continue  # sized to their cells (see _marks)
        floor = PANEL_TITLE_PX if annotation.get("xref") == "paper" else FLOOR_PX
        font = dict(annotation.get("font", {}))
        font["size"] = max(floor, font.get("size") or 0)
        annotation.update(font=font, text=_floored(annotation.get("text")))
    coloraxes = [k for k in layout.to_plotly_json() if re.fullmatch(r"coloraxis\d*", k)]
    for name in coloraxes:
        layout[name].colorbar.tickfont.size = TEXT_PX
        layout[name].colorbar.title.font.size = TEXT_PX
        layout[name].colorbar.title.text = _floored(layout[name].colorbar.title.text)
    for trace in fig.data:
        if "colorbar" in trace and trace.colorbar is not None:
            trace.colorbar.tickfont.size = TEXT_PX
            trace.colorbar.title.font.size = TEXT_PX
        if "textfont" in trace and (trace.texttemplate or getattr(trace, "text", None)
                                    is not None or trace.textfont.size is not None):
            size = trace.textfont.size
            if isinstance(size, (int, float)) or size is None:
                trace.textfont.size = max(FLOOR_PX, size or 0)
            else:  # one size a point
                trace.textfont.size = [max(FLOOR_PX, s or 0) for s in size]
        if getattr(trace, "type", "") == "scatter" and trace.text is not None:
            trace.text = (_floored(trace.text) if isinstance(trace.text, str)
                          else trace.text)
    for name in [k for k in layout.to_plotly_json() if re.fullmatch(r"[xy]axis\d*", k)]:
        axis = layout[name]
        axis.update(tickfont={"size": TICK_PX}, title={"font": {"size": AXIS_TITLE_PX}},
                    automargin=True)
        axis.title.text = _floored(axis.title.text)
        if axis.ticktext is not None:
            axis.ticktext = [_floored(str(t)) for t in axis.ticktext]
        if axis.type == "log" and axis.dtick is None:  # its 2s and 5s would run into each other
            axis.dtick = 1  # one label a decade


def for_projector(figure: go.Figure | dict, *, width_px: float = PROJECTOR_CHART_PX,
                  narrow_px: float | None = None,
                  cell_values_up_to: int = CELL_VALUES_UP_TO) -> go.Figure:
    """A copy of ``figure`` restyled for a projector (see the module's description).

    Args:
        width_px: the width the chart is drawn at on a 1920×1080 projector (a chart in one of
            two columns gets about half); the values in cells are fitted to it.
        narrow_px: the chart's width on the narrowest projector it is made for (default: in
            the proportion of a 1280×720 one); tick labels and marks are fitted to it, so that
            they fit on both.
        cell_values_up_to: small heatmaps, up to this many rows and columns, get their values
            written in their cells.
    """
    if narrow_px is None:
        narrow_px = width_px * SMALL_PROJECTOR_CHART_PX / PROJECTOR_CHART_PX
    fig, annotations = _copy_apart(figure)
    layout = fig.layout
    meta = _meta(fig)
    if not meta.get("projector"):  # laid out for a screen: more room for the larger text
        scale = 1.35
        layout.height = (layout.height or 450) * scale
        for side in ("t", "b"):
            layout.margin[side] = margin(layout, side) * scale
    _floor_fonts(fig, annotations)
    fit_title(fig, narrow_px, TITLE_PX, TEXT_PX, floor=FLOOR_PX, annotations=annotations)
    fit_ticks(fig, narrow_px, font_px=TICK_PX)
    if annotations:
        layout.annotations = _marks(fig, annotations, narrow_px)
    _cell_values(fig, cell_values_up_to, width_px, narrow_px, width_px / PROJECTOR_CHART_PX)
    return fig


def with_palette(figure: go.Figure | dict, palette: str) -> go.Figure | dict:
    """``figure`` with its weights' colour scale (Blues) replaced by ``palette`` (a key of
    :data:`PALETTES`); unchanged for the default palette."""
    scale = PALETTES.get(palette)
    if scale is None:
        return figure
    fig = _copy(figure)

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
