"""Token labels for axes and hovers: HTML-escaped, whitespace made visible, and fitted to the
width a chart is shown at so that they never overlap (:func:`fit_ticks`).

Fitting works from the figure alone: the chart's width in px (:mod:`viz.sizes`), the figure's
height, margins, domains and colour bars give each axis its length; the labels' widths come from
:func:`text_width`. An axis gets its labels horizontal when they fit side by side, else slanted
at 45° or, a short axis on a narrow chart, standing; a long axis is thinned to every k-th label,
horizontal, slanted or standing with a line of air between (never in a band); rows (y) are
thinned to one line apart. "Fit"
means that no two labels' boxes overlap as the browser measures them (upright rectangles
around the turned text, as ``tests/browser/test_screenshots.py`` checks). The full labels are
kept in ``layout.meta["ticks"]``, so that the same figure fitted again at another width (a
projector's, in presentation mode) starts from all of them.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from viz.style import SPECIAL_TOKEN_COLOR


def visible(token: str) -> str:
    """A token made only of whitespace (spaces, no-break or ideographic spaces) shows each as
    ``␣`` (an empty one as ``∅``); other tokens as they are."""
    token = str(token)
    if not token:
        return "∅"
    return re.sub(r"\s", "␣", token) if not token.strip() else token


def escape(tokens: Sequence[str]) -> list[str]:
    """Tokens made safe for Plotly's HTML-like text (``<bos>`` would otherwise vanish), with
    whitespace-only tokens made visible."""
    return [html.escape(visible(t), quote=False) for t in tokens]


SPECIAL_STYLE = f"<span style='color:{SPECIAL_TOKEN_COLOR}'><i>{{}}</i></span>"


LABEL_PX = 16  # the least room a horizontal label's line, or a slanted label, needs


def labels_that_fit(pixels: float) -> int:
    """How many labels fit along ``pixels`` without overlapping (at least one)."""
    return max(1, int(pixels // LABEL_PX))


def axis_ticks(tokens: Sequence[str], max_labels: int = 64, special=()) -> dict:
    """Axis settings placing token labels at integer positions.

    Plotly merges equal category labels, so positions are integers and tokens are tick text:
    repeated tokens stay distinct. Past ``max_labels`` tokens only every k-th is labelled.
    Positions in ``special`` (special tokens such as ``[CLS]``) are drawn grey and italic.

    Returns:
        dict for ``fig.update_xaxes``/``update_yaxes``: ``tickmode``, ``tickvals``, ``ticktext``.
    """
    n = len(tokens)
    step = max(1, int(np.ceil(n / max_labels)))
    positions = list(range(0, n, step))
    special = set(special)
    labels = [SPECIAL_STYLE.format(label) if i in special else label
              for i, label in zip(positions, escape([tokens[i] for i in positions]))]
    return {"tickmode": "array", "tickvals": positions, "ticktext": labels}


def check_weights(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str],
                  ndim: int = 2) -> np.ndarray:
    """Validate a ``[..., query, key]`` array against its token axes and return it as float."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != ndim:
        raise ValueError(f"expected a {ndim}-D array of weights, got shape {weights.shape}")
    if weights.shape[-2:] != (len(query_tokens), len(key_tokens)):
        raise ValueError(
            f"weights of shape {weights.shape} do not match {len(query_tokens)} query and "
            f"{len(key_tokens)} key tokens")
    return weights


# --- how wide text is, and labels fitted to an axis ----------------------------------------

FONT_PX = 12  # Plotly's default font size: the text of a figure that sets none
LINE = 1.3  # one line of text, in font sizes (Plotly's own line spacing)
GAP = 0.6  # the least room between two horizontal labels, in font sizes
SLANT = -45  # the angle of labels too wide to stand side by side
UPRIGHT = -90  # the angle of a short axis's labels that only fit standing
AIRED = 2  # lines from one standing label to the next on a thinned axis
MAX_LABEL_CHARS = 14  # a tick label keeps this many characters, then "…" (the hover has all)
TICK_ROOM = 8  # px between an axis and its labels (tick length and padding)
_TAGS = re.compile(r"<[^>]+>")
_MARGINS = {"l": 80, "r": 80, "t": 100, "b": 80}  # Plotly's defaults
_SIN = math.sin(math.radians(-SLANT))


def _plain(label: str) -> str:
    """What a label shows: markup left out, entities (``&lt;``) read as their characters."""
    return html.unescape(_TAGS.sub("", str(label)))


def text_width(label: str, font_px: float) -> float:
    """The width of ``label`` in pixels at ``font_px``: wide (CJK) characters one font size,
    others about 0.6 (a little more than most fonts' average, so that estimates err wide);
    markup left out."""
    return font_px * sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6
                         for c in _plain(label))


def shortened(label: str, most: int = MAX_LABEL_CHARS) -> str:
    """``label`` cut to ``most`` characters and "…" (a label with markup is kept whole: it is
    a special token's, and short)."""
    label = str(label)
    if "<" in label:
        return label
    plain = html.unescape(label)
    if len(plain) <= most:
        return label
    cut = plain[:most - 1].rstrip()
    if "…" in cut:  # a block's "first…last": its first token says where it starts
        cut = cut[:cut.index("…")]
    return html.escape(cut.rstrip(" .,:;") + "…", quote=False)


_PIECES = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef]|"
                     r"[^\s\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef]+\s*|\s+")


_NO_LINE_START = "，。、：；！？）》」』】,.;:!?)"  # punctuation a line never starts with


def wrap(line: str, font_px: float, width_px: float) -> list[str]:
    """A line of text broken at spaces (and between wide characters, which Chinese writes
    without spaces) into pieces at most ``width_px`` wide where it can be; markup inside a
    word (``W<sub>Q</sub>``) stays whole."""
    if text_width(line, font_px) <= width_px:
        return [line]
    lines, current = [], ""
    for piece in _PIECES.findall(line):
        if current.strip() and piece[0] not in _NO_LINE_START and text_width(
                (current + piece).rstrip(), font_px) > width_px:
            lines.append(current.rstrip())
            current = piece.lstrip()
        else:
            current += piece
    if current.strip():
        lines.append(current.rstrip())
    return lines or [line]


def fit_axis(values: Sequence[float], texts: Sequence[str], length_px: float, font_px: float,
             *, horizontal: bool, span: float | None = None) -> dict:
    """The labels of one axis fitted to ``length_px``: ``tickvals``, ``ticktext`` and, for a
    horizontal axis (x), ``tickangle``: 0 when every label fits side by side, else
    :data:`SLANT` when every one fits slanted, else :data:`UPRIGHT` when every one fits
    standing; past that, thinned to every k-th, side by side, slanted or standing a line of
    air apart (whichever keeps the most), so that no two labels' boxes overlap.

    Args:
        values, texts: every label's position and text (positions in the axis's units).
        length_px: the axis's length on the screen.
        font_px: the labels' font size.
        horizontal: an x axis (labels side by side); else a y axis (labels one above another).
        span: the axis's length in its own units (default: from the first to the last label,
            one unit more, as a heatmap's cells).
    """
    values, texts = list(values), list(texts)
    if not texts:
        return {}
    if span is None:
        span = (max(values) - min(values) + 1) if len(values) > 1 else 1
    unit = (min(b - a for a, b in zip(values, values[1:]) if b > a)
            if len(values) > 1 and max(values) > min(values) else span)
    pitch = max(unit * length_px / max(span, 1e-9), 1e-6)  # px between two labels
    line = font_px * LINE
    update: dict = {}
    if horizontal:
        # Steps that keep the labels' boxes apart (as the browser measures them, upright
        # rectangles around the turned text): side by side a label needs its width; slanted,
        # the width of its turned box; upright, one line.
        widest = max(text_width(t, font_px) for t in texts)
        flat = math.ceil((widest + GAP * font_px) / pitch)
        slanted = math.ceil(_SIN * (widest + line) / pitch)
        upright = math.ceil(line / pitch)
        if flat == 1:
            step, update["tickangle"] = 1, 0
        elif slanted == 1:
            step, update["tickangle"] = 1, SLANT
        elif upright == 1:  # every label kept, standing: a short text on a narrow chart
            step, update["tickangle"] = 1, UPRIGHT
        else:  # thinned: whichever keeps the most labels, standing ones a line of air apart
            # rather than touching in a band
            spaced = math.ceil(AIRED * line / pitch)
            step, update["tickangle"] = min((flat, 0), (slanted, SLANT), (spaced, UPRIGHT),
                                            key=lambda option: option[0])
    else:
        step = math.ceil(line / pitch)
    step = max(1, step)
    update.update(tickvals=values[::step], ticktext=texts[::step])
    return update


def label_extent(texts: Sequence[str], font_px: float, angle: float | None) -> float:
    """How far labels reach away from their axis, in px: a line for horizontal ones, the
    widest one's slanted height for slanted ones."""
    if not texts:
        return 0.0
    widest = max(text_width(t, font_px) for t in texts)
    if not angle:
        return font_px * LINE
    radians = math.radians(abs(angle))
    return widest * math.sin(radians) + font_px * math.cos(radians)


def heatmap_shape(z) -> tuple[int, ...]:
    """The shape of a heatmap's ``z``: a nested list, an array, or Plotly's typed-array dict
    (``{"dtype", "bdata", "shape"}``) of a figure rebuilt from its JSON."""
    if isinstance(z, dict):
        return tuple(int(n) for n in str(z.get("shape", "0")).split(","))
    return np.shape(z)


def _font(layout, axis) -> float:
    size = axis.tickfont.size if axis.tickfont is not None else None
    return float(size or (layout.font.size if layout.font is not None else None) or FONT_PX)


def margin(layout, side: str) -> float:
    """The figure's margin on ``side`` (``l``, ``r``, ``t``, ``b``) in px."""
    value = layout.margin[side] if layout.margin is not None else None
    return float(_MARGINS[side] if value is None else value)


def _colour_bars(fig) -> list:
    """The colour bars a figure draws (of its colour axes and of traces with their own)."""
    layout, bars, axes = fig.layout, [], set()
    for trace in fig.data:
        if trace.type not in ("heatmap", "contour", "histogram2d") and not (
                getattr(trace, "marker", None) is not None
                and getattr(trace.marker, "coloraxis", None)):
            continue
        coloraxis = getattr(trace, "coloraxis", None) or (
            trace.marker.coloraxis if getattr(trace, "marker", None) is not None else None)
        if coloraxis:
            axes.add(coloraxis)
        elif (trace.type != "scatter" and trace.showscale is not False
              and trace.visible is not False):
            bars.append(trace.colorbar)
    for name in sorted(axes):
        axis = layout["coloraxis" + name.removeprefix("coloraxis")]
        if axis.showscale is not False:
            bars.append(axis.colorbar)
    return bars


def colour_bar_px(bar, font_px: float) -> float:
    """The width a vertical colour bar takes right of the plot: its bar, its tick labels and
    its title."""
    tick = (bar.tickfont.size if bar.tickfont is not None else None) or font_px
    title = bar.title.text if bar.title is not None else None
    title_px = (bar.title.font.size if bar.title is not None and bar.title.font is not None
                else None) or font_px
    thickness = bar.thickness if bar.thickness is not None else 30
    labels = thickness + 10 + 0.6 * tick * 5  # "-0.25", "1.0k"
    return 20 + max(labels, text_width(title, title_px) if title else 0)


def foot_bars_px(fig) -> float:
    """The room horizontal colour bars at the figure's foot (``yref="container"``) take."""
    font = float((fig.layout.font.size if fig.layout.font is not None else None) or FONT_PX)
    room = 0.0
    for bar in _colour_bars(fig):
        if bar.orientation == "h" and bar.yref == "container" and (bar.y or 0) <= 0.1:
            tick = (bar.tickfont.size if bar.tickfont is not None else None) or font
            title = bar.title.text if bar.title is not None else None
            title_px = ((bar.title.font.size if bar.title.font is not None else None)
                        or font) if title else 0
            thickness = bar.thickness if bar.thickness is not None else 30
            room = max(room, thickness + (tick + title_px) * LINE + 16)
    return room


def plot_box(fig, width_px: float) -> tuple[float, float, float, float, float, float]:
    """``(left, right, top, bottom, width, height)``: the margins Plotly will draw the figure
    with at ``width_px`` (the figure's own, grown for colour bars right of the plot) and the
    plot area between them, in px."""
    layout = fig.layout
    width = float(layout.width or width_px)
    height = float(layout.height or 450)
    left, right = margin(layout, "l"), margin(layout, "r")
    top, bottom = margin(layout, "t"), margin(layout, "b")
    font = float((layout.font.size if layout.font is not None else None) or FONT_PX)
    for bar in _colour_bars(fig):
        if bar.orientation == "h":
            continue
        x = 1.02 if bar.x is None else bar.x
        if x >= 1 or bar.xanchor in (None, "left") and x >= 0.98:
            inside = max(0.0, x - 1) * (width - left - right)
            right = max(right, inside + colour_bar_px(bar, font))
    return left, right, top, bottom, max(width - left - right, 1), max(height - top - bottom, 1)


def _span(fig, axis_name: str, values) -> float | None:
    """An axis's length in its own units: its range, else its heatmaps' cells."""
    axis = fig.layout[axis_name]
    if axis.range is not None and None not in tuple(axis.range):
        return abs(float(axis.range[1]) - float(axis.range[0]))
    letter = axis_name[0]
    ref = letter + axis_name.removeprefix(letter + "axis")
    for trace in fig.data:
        if trace.type == "heatmap" and (getattr(trace, f"{letter}axis") or letter) == ref:
            coords = getattr(trace, letter)
            if coords is not None:
                return float(len(coords))
            shape = heatmap_shape(trace.z)
            if len(shape) == 2:
                return float(shape[1] if letter == "x" else shape[0])
    return None


def _anchor_domain(layout, axis_name: str) -> tuple[float, float]:
    """The domain of the axis ``axis_name`` stands on: an x axis's row, a y axis's column."""
    axis = layout[axis_name]
    other = "y" if axis_name.startswith("x") else "x"
    anchor = axis.anchor if axis.anchor not in (None, "free") else other
    partner = layout[f"{other}axis{anchor.removeprefix(other)}"]
    domain = partner.domain if partner is not None and partner.domain is not None else (0, 1)
    return float(domain[0]), float(domain[1])


def token_axes(fig) -> list[str]:
    """The names of a figure's axes that carry labels of their own (``tickvals`` and
    ``ticktext``), shown."""
    names = [k for k in fig.layout.to_plotly_json() if re.fullmatch(r"[xy]axis\d*", k)]
    return [n for n in names if fig.layout[n].ticktext is not None
            and fig.layout[n].tickvals is not None and fig.layout[n].showticklabels is not False
            and fig.layout[n].visible is not False]


def full_ticks(fig, axis_name: str) -> tuple[list, list[str]]:
    """Every label an axis was given, before any fitting thinned them."""
    meta = fig.layout.meta
    kept = meta.get("ticks", {}).get(axis_name) if isinstance(meta, dict) else None
    if kept is not None:
        return list(kept[0]), list(kept[1])
    axis = fig.layout[axis_name]
    return list(axis.tickvals), [str(t) for t in axis.ticktext]


def _start(fig, axis_name: str, values) -> float:
    """Where an axis begins, in its own units: its range's low end, else its heatmaps' first
    cell's edge."""
    axis = fig.layout[axis_name]
    if axis.range is not None and None not in tuple(axis.range):
        return min(float(v) for v in axis.range)
    letter = axis_name[0]
    ref = letter + axis_name.removeprefix(letter + "axis")
    for trace in fig.data:
        if trace.type == "heatmap" and (getattr(trace, f"{letter}axis") or letter) == ref:
            coords = getattr(trace, letter)
            if coords is not None and len(coords) > 1:
                return float(coords[0]) - (float(coords[1]) - float(coords[0])) / 2
            return -0.5
    return min(values) - 0.5


def label_spans(xs: Sequence[float], texts: Sequence[str], font_px: float,
                angle: float | None) -> list[tuple[float, float]]:
    """The left and right ends, in px, of the boxes of labels at ``xs`` (px) on a horizontal
    axis, turned by ``angle`` as Plotly turns them (about their end, past 0°)."""
    line = font_px * LINE
    spans = []
    for x, text in zip(xs, texts):
        width = text_width(text, font_px)
        if not angle:
            spans.append((x - width / 2, x + width / 2))
        elif abs(angle) >= 90:
            spans.append((x - line / 2, x + line / 2))
        else:
            radians = math.radians(abs(angle))
            spans.append((x - width * math.cos(radians) - line / 2 * math.sin(radians),
                          x + line / 2 * math.sin(radians)))
    return spans


def _fit_columns(fig, names: list[str], kept: dict, width_px: float, most_chars: int) -> float:
    """Fit the x axes ``names`` to the plot's width; where panels side by side would have
    their neighbours' labels meet, drop the left one's last labels. Returns how far the
    labels reach left of the plot area, in px."""
    layout = fig.layout
    left, _, _, _, plot_w, _ = plot_box(fig, width_px)
    spans = {}
    for name in names:
        axis = layout[name]
        values, texts = kept[name]
        texts = [shortened(t, most_chars) for t in texts]
        lo, hi = axis.domain if axis.domain is not None else (0, 1)
        font, span = _font(layout, axis), _span(fig, name, values)
        update = fit_axis(values, texts, (hi - lo) * plot_w, font, horizontal=True, span=span)
        axis.update(update)
        per_unit = (hi - lo) * plot_w / max(span or (max(values) - min(values) + 1), 1e-9)
        start = _start(fig, name, values)
        xs = [lo * plot_w + (v - start) * per_unit for v in update["tickvals"]]
        spans[name] = label_spans(xs, update["ticktext"], font, update["tickangle"])
    rows: dict[float, list[str]] = {}
    for name in names:
        rows.setdefault(round(_anchor_domain(layout, name)[0], 4), []).append(name)
    reach = 0.0
    for row in rows.values():
        row.sort(key=lambda n: (layout[n].domain or (0, 1))[0])
        if spans[row[0]]:
            reach = max(reach, -spans[row[0]][0][0])
        for before, after in zip(row, row[1:]):
            if not spans[after]:
                continue
            edge = spans[after][0][0]
            axis = layout[before]
            values, texts = list(axis.tickvals), list(axis.ticktext)
            while spans[before] and spans[before][-1][1] + 1 > edge:
                spans[before].pop()
                values.pop()
                texts.pop()
            axis.update(tickvals=values, ticktext=texts)
    return reach


def fit_ticks(fig, width_px: float, font_px: float | None = None,
              most_chars: int = MAX_LABEL_CHARS):
    """Fit every token axis of ``fig`` (changed in place, and returned) to the chart's width
    ``width_px``: labels cut to ``most_chars`` characters, horizontal where they fit side by
    side, else slanted and thinned so that none overlap; the left and bottom margins grow to
    hold them. ``font_px`` sets the labels' size (default: the figure's)."""
    layout = fig.layout
    names = token_axes(fig)
    if not names:
        return fig
    meta = dict(layout.meta) if isinstance(layout.meta, dict) else (
        {} if layout.meta is None else {"value": layout.meta})
    kept = dict(meta.get("ticks", {}))
    for name in names:
        if name not in kept:
            values, texts = full_ticks(fig, name)
            kept[name] = [values, texts]
    meta["ticks"] = kept
    layout.meta = meta
    if font_px is not None:
        for name in names:
            layout[name].tickfont.size = font_px
    # rows first: their labels' width sets the left margin, which the columns' length needs
    left = margin(layout, "l")
    leftmost = min((_anchor_domain(layout, n)[0] for n in names if n.startswith("y")), default=0)
    for name in (n for n in names if n.startswith("y")):
        axis = layout[name]
        if axis.side == "right" or _anchor_domain(layout, name)[0] > leftmost + 1e-6:
            continue
        texts = [shortened(t, most_chars) for t in kept[name][1]]
        title = axis.title.text if axis.title is not None else None
        title_px = ((axis.title.font.size if axis.title.font is not None else None)
                    or _font(layout, axis)) * LINE + 6 if title else 0
        left = max(left, max(text_width(t, _font(layout, axis)) for t in texts) + TICK_ROOM
                   + title_px + 4)
    layout.margin.l = math.ceil(left)
    for _attempt in range(2):  # again if the first column's labels need the left margin wider
        reach = _fit_columns(fig, [n for n in names if n.startswith("x")], kept, width_px,
                             most_chars)
        if reach <= margin(layout, "l") - 2:
            break
        layout.margin.l = math.ceil(reach + 4)
    bottom = margin(layout, "b")
    lowest = min((_anchor_domain(layout, n)[0] for n in names if n.startswith("x")), default=0)
    for name in (n for n in names if n.startswith("x")):
        axis = layout[name]
        if axis.side != "top" and _anchor_domain(layout, name)[0] <= lowest + 1e-6:
            font = _font(layout, axis)
            title = axis.title.text if axis.title is not None else None
            title_px = ((axis.title.font.size if axis.title.font is not None else None)
                        or font) * LINE + 6 if title else 0
            bottom = max(bottom, label_extent(axis.ticktext, font, axis.tickangle)
                         + TICK_ROOM + title_px + 4 + foot_bars_px(fig))
    layout.margin.b = math.ceil(bottom)
    _, _, _, _, _, plot_h = plot_box(fig, width_px)
    for name in (n for n in names if n.startswith("y")):
        axis = layout[name]
        values, texts = kept[name]
        lo, hi = axis.domain if axis.domain is not None else (0, 1)
        update = fit_axis(values, [shortened(t, most_chars) for t in texts], (hi - lo) * plot_h,
                          _font(layout, axis), horizontal=False, span=_span(fig, name, values))
        axis.update(update)
    return fig
