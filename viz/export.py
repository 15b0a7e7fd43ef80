"""Figures as files for slides and papers: PNG, SVG and PDF rendered by kaleido 1.x (with the
system's Chromium), a standalone HTML file that works offline (plotly.js inside), the shown
matrix as CSV, and many files as one ZIP.

Images and HTML files are rendered at the width the chart is shown at (its labels were fitted
to it), on an opaque background in the colours of the page's theme, light or dark
(:data:`viz.style.THEME_COLORS`): a figure on the page lets the page show through, a file has
nothing behind it but the slide it is put on.

Kaleido keeps one Chromium running once the first image is asked for (about 4 s), so each later
image takes well under a second.
"""

from __future__ import annotations

import base64
import csv
import io
import re
import threading
import unicodedata
import warnings
import zipfile
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

import i18n
from i18n import N_, _
from viz.style import THEME_COLORS

IMAGE_FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf"}
IMAGE_SCALE = 3  # a 700 px wide chart becomes 2,100 px: sharp on a projector and in print
MAX_PNG_PX = 2400  # the widest PNG exported (wider charts get a smaller scale)
DEFAULT_SIZE = (900, 600)  # px, for figures whose width follows the page
_server = threading.Lock()
_started = False
# Plotly's own words on a chart (its toolbar's tooltips, its notes while zooming and saving), in
# English: Plotly looks each one up in its config's locale, which the app's charts and the HTML
# files give it in the page's language (the chart's Fullscreen button is Streamlit's, in English).
PLOTLY_WORDS = (
    N_("Zoom"), N_("Pan"), N_("Box Select"), N_("Lasso Select"), N_("Zoom in"), N_("Zoom out"),
    N_("Autoscale"), N_("Reset axes"), N_("Reset view"), N_("Download plot as a PNG"),
    N_("Download plot"), N_("Toggle Spike Lines"), N_("Show closest data on hover"),
    N_("Compare data on hover"), N_("Toggle show closest data on hover"),
    N_("Double-click to zoom back out"), N_("Double-click on legend to isolate one trace"),
    N_("Preparing image - this may take a few seconds"), N_("Image download succeeded"),
    N_("Sorry, there was a problem downloading your image!"),
)
PLOTLY_LOCALES = {"zh": "zh-CN"}  # the page's language as Plotly names its locales


def plotly_language() -> dict:
    """The part of a chart's config that makes Plotly's own words (:data:`PLOTLY_WORDS`) those
    of the page's language: its ``locale`` and that locale's dictionary, from the catalog;
    nothing in English."""
    code = i18n.language()
    if code == i18n.DEFAULT:
        return {}
    locale = PLOTLY_LOCALES.get(code, code)
    return {"locale": locale,
            "locales": {locale: {"dictionary": {word: _(word) for word in PLOTLY_WORDS}}}}


def _start_kaleido() -> None:
    """Keep one Chromium for every image of this process (started once, on first use)."""
    global _started
    with _server:
        if not _started:
            import kaleido

            kaleido.start_sync_server(silence_warnings=True)
            _started = True


def file_stem(*parts: object, most: int = 80) -> str:
    """A file name (without extension) from ``parts``: words kept (Chinese included), anything a
    file system may refuse replaced by ``-``, at most ``most`` characters."""
    words = []
    for part in parts:
        if part is None or part == "":
            continue
        text = unicodedata.normalize("NFKC", str(part))
        text = re.sub(r"[^\w.\u4e00-\u9fff]+", "-", text).strip("-.")
        if text:
            words.append(text)
    return ("_".join(words) or "figure")[:most].rstrip("-_.")


THEMES = {"light": "plotly_white", "dark": "plotly_dark"}  # Plotly's template of each theme


def for_slide(figure: go.Figure | dict, width: float | None = None,
              theme: str = "light") -> go.Figure:
    """A copy of ``figure`` as a file draws it: ``width`` px wide (default: its own width, else
    :data:`DEFAULT_SIZE`), its own height, and opaque in the colours of the page's ``theme``
    (``"light"`` or ``"dark"``): the theme's background behind the figure and its plot, its
    text colour for text that sets none, faint grid lines."""
    if theme not in THEME_COLORS:
        raise ValueError(f"unknown theme {theme!r}: use one of {', '.join(THEME_COLORS)}")
    copy = go.Figure(figure.to_dict() if isinstance(figure, go.Figure) else figure)
    colors = THEME_COLORS[theme]
    copy.update_layout(
        template=THEMES[theme], width=round(width or copy.layout.width or DEFAULT_SIZE[0]),
        height=round(copy.layout.height or DEFAULT_SIZE[1]),
        paper_bgcolor=colors["background"], plot_bgcolor=colors["background"],
        font={"color": colors["text"]})
    for axes in (copy.update_xaxes, copy.update_yaxes):
        axes(gridcolor=colors["grid"], zerolinecolor=colors["grid"], selector=lambda a: (
            a.gridcolor is None))
    return copy


def image(figure: go.Figure, fmt: str, scale: float = IMAGE_SCALE, *,
          width: float | None = None, theme: str = "light") -> bytes:
    """The figure as ``png``, ``svg`` or ``pdf`` bytes (PNG at ``scale`` × its size), drawn as
    :func:`for_slide` draws it (``width`` px wide, opaque in ``theme``'s colours)."""
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"unknown image format {fmt!r}: use one of {', '.join(IMAGE_FORMATS)}")
    _start_kaleido()
    with warnings.catch_warnings():  # plotly warns that a running server ignores its options
        warnings.simplefilter("ignore", UserWarning)
        slide = for_slide(figure, width, theme)
        # a PNG at most MAX_PNG_PX wide: a full-width projector chart at 3x would be 5,280 px,
        # and a page's ZIP of them took minutes to render
        shown = slide.layout.width or width or 0
        if fmt == "png" and shown:
            scale = min(scale, max(1.0, MAX_PNG_PX / shown))
        return pio.to_image(slide, format=fmt, scale=scale if fmt == "png" else 1)


def html(figure: go.Figure, title: str = "", *, width: float | None = None,
         theme: str = "light") -> bytes:
    """A standalone HTML page of the figure that works offline (plotly.js embedded), drawn as
    :func:`for_slide` draws it."""
    page = pio.to_html(for_slide(figure, width, theme), include_plotlyjs=True, full_html=True,
                       config={"displaylogo": False, **plotly_language()})
    if title:
        page = page.replace("<head>", f"<head><title>{_escape(title)}</title>", 1)
    return page.encode("utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def matrix_csv(matrix, row_labels: Sequence[str], column_labels: Sequence[str],
               corner: str = "") -> bytes:
    """A matrix as CSV: a header of column labels, each row led by its label (UTF-8 with a
    byte-order mark, so that spreadsheets read Chinese labels). Masked cells (NaN) stay
    empty; values are written in full precision."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.shape != (len(row_labels), len(column_labels)):
        raise ValueError(f"a {matrix.shape} matrix does not match {len(row_labels)} row and "
                         f"{len(column_labels)} column labels")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([corner, *map(str, column_labels)])
    for label, row in zip(row_labels, matrix, strict=True):
        writer.writerow([str(label), *("" if np.isnan(v) else repr(float(v)) for v in row)])
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def figure_table(figure: go.Figure) -> bytes:
    """What a figure shows, as CSV: the first heatmap's matrix with its axis labels (all of
    them, not the thinned tick labels), else every trace's points."""
    for trace in figure.data:
        if trace.type == "heatmap" and trace.z is not None:
            z = _array(trace.z)
            rows = _labels(figure, trace, "y", z.shape[0])
            columns = _labels(figure, trace, "x", z.shape[1])
            return matrix_csv(z, rows, columns)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([_("trace"), "x", "y"])
    for index, trace in enumerate(figure.data):
        name = trace.name or _("trace {index}").format(index=index)
        xs = getattr(trace, "x", None)
        ys = getattr(trace, "y", None)
        if xs is None or ys is None:
            continue
        for x, y in zip(xs, ys, strict=False):
            writer.writerow([name, x, y])
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def _array(value) -> np.ndarray:
    """A figure's array as floats: plain lists, or Plotly's typed-array dict (``bdata``) that a
    figure read back from its JSON holds."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
        return array.astype(float)
    return np.asarray(value, dtype=float)


def _labels(figure: go.Figure, trace, axis: str, n: int) -> list[str]:
    """Labels of a heatmap's ``n`` rows or columns: the axis's tick labels when there is one
    per cell, else the trace's own x/y, else the positions."""
    ref = getattr(trace, f"{axis}axis", None) or axis  # "x", "x2", ...
    layout_axis = figure.layout[f"{axis}axis{ref[1:]}"]
    ticks = layout_axis.ticktext if layout_axis is not None else None
    values = getattr(trace, axis)
    for candidate in (ticks, values):
        if candidate is not None and len(candidate) == n:
            return [re.sub(r"<[^>]+>", "", str(v)) for v in candidate]
    return [str(i) for i in range(n)]


def bundle(files: Mapping[str, bytes]) -> bytes:
    """Several files as one ZIP."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()
