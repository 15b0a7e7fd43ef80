"""Charts on a page: every figure drawn through :func:`chart` (bounded in bytes, fitted to the
width it is shown at, restyled for presentation mode) with its exports, and the page's ZIP of
them.

A chart is fitted to the width a page gives it on the screens the app is made for
(:mod:`viz.sizes`: a 1024 px screen, in presentation mode 1920×1080 and 1280×720 projectors),
times its ``share`` of the page; its exports are rendered at that width, on the page theme's
background, opaque, for a light or a dark slide."""

from __future__ import annotations

import re
from collections.abc import Callable

import plotly.graph_objects as go
import plotly.io
import streamlit as st

import i18n
from app_pages.frame.settings import presenting
from i18n import _
from model.budget import FIGURE_BYTES
from viz import export, present
from viz.numbers import rough_size
from viz.sizes import PROJECTOR_CHART_PX, SCREEN_CHART_PX, SMALL_PROJECTOR_CHART_PX

# Plotly's toolbar, kept to what a reader uses, so that it covers less of a chart's top edge;
# its camera saves a PNG at three times the chart's size.
CHART_CONFIG = {"displaylogo": False,
                "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d", "zoomIn2d",
                                           "zoomOut2d"]}
EXPORTS = {"PNG": ("png", "image/png"), "SVG": ("svg", "image/svg+xml"),
           "PDF": ("pdf", "application/pdf"), "HTML": ("html", "text/html"),
           "CSV": ("csv", "text/csv")}
FIGURES = "_page_figures"  # this run's figures, for the page's ZIP (app.py)
EXPORT_CONTEXT = "_export_context"  # the model and the text the exported files are named after


def export_name(*parts) -> str:
    """A file name for this page's exports: the model and the text's first words, then
    ``parts`` (kind, layer, head, ...)."""
    context = st.session_state.get(EXPORT_CONTEXT, ())
    return export.file_stem(*context, *parts)


def export_files(figure, stem: str, table: Callable[[], bytes] | None = None, *,
                 width: float | None = None, theme: str = "light"
                 ) -> dict[str, Callable[[], bytes]]:
    """``{file name: how to make it}`` for one figure (a ``go.Figure`` or its dict): PNG, SVG,
    PDF, offline HTML, CSV. Nothing is made until asked.

    Args:
        width: the width in px the figure is shown at, which the images and the HTML file are
            rendered at (default: the figure's own, else :data:`viz.export.DEFAULT_SIZE`).
        theme: ``"light"`` or ``"dark"``: the page's theme, whose background and text colours
            the files are drawn in (opaque, for a slide of that colour).
    """

    def as_figure() -> go.Figure:
        return figure if isinstance(figure, go.Figure) else go.Figure(figure)

    look = {"width": width, "theme": theme}
    makers = {f"{stem}.png": lambda: export.image(as_figure(), "png", **look),
              f"{stem}.svg": lambda: export.image(as_figure(), "svg", **look),
              f"{stem}.pdf": lambda: export.image(as_figure(), "pdf", **look),
              f"{stem}.html": lambda: export.html(as_figure(), stem, **look),
              f"{stem}.csv": table or (lambda: export.figure_table(as_figure()))}
    return {name: in_this_language(make) for name, make in makers.items()}


def in_this_language(make: Callable[[], bytes]) -> Callable[[], bytes]:
    """``make``, run in this run's language wherever it runs: Streamlit makes a download
    when it is clicked, in a thread of its own that speaks the default language."""
    code = i18n.language()

    def made() -> bytes:
        with i18n.use(code):
            return make()

    return made


def shown_width(share: float = 1.0) -> float:
    """The width in px a chart with ``share`` of the page's width is shown at: on a 1024 px
    screen, or in presentation mode on a 1920×1080 projector."""
    return (PROJECTOR_CHART_PX if presenting() else SCREEN_CHART_PX) * share


def shown_figure(figure, share: float = 1.0) -> go.Figure:
    """``figure`` as this session shows it: in the chosen palette, its labels and title
    fitted to the width it is shown at, and restyled for a projector in presentation mode
    (``share``: the part of the page's width the chart gets)."""
    palette = st.session_state.get("palette", "default")
    if palette in present.PALETTES and palette != "default":
        figure = present.with_palette(figure, palette)
    if presenting():
        return present.for_projector(figure, width_px=PROJECTOR_CHART_PX * share,
                                     narrow_px=SMALL_PROJECTOR_CHART_PX * share)
    return present.for_screen(figure, width_px=SCREEN_CHART_PX * share)


def page_theme() -> str:
    """The page's theme, ``"light"`` or ``"dark"`` (light until the browser has said)."""
    theme = st.context.theme.type
    return theme if theme in ("light", "dark") else "light"


def _wide_only_css(figure: go.Figure, key: str) -> str:
    """CSS hiding the values written in cells that a narrower page's cells would not hold
    (``layout.meta["wide_only"]``, see :mod:`viz.present`), below the page width that holds
    them; empty when there are none."""
    meta = figure.layout.meta
    wide_only = meta.get("wide_only", ()) if isinstance(meta, dict) else ()
    chart_class = "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key)  # as Streamlit writes it
    return "".join(
        f"@media (max-width: {int(panel['below_px']) - 1}px) {{ .{chart_class} "
        f".subplot.{panel['subplot']} .heatmap-label {{ display: none; }} }}"
        for panel in wide_only
        if re.fullmatch(r"x\d*y\d*", str(panel.get("subplot", ""))))


MAX_FIGURE_BYTES = FIGURE_BYTES  # the most one chart sends; a larger one is refused


def figure_bytes(figure) -> int:
    """The bytes of ``figure`` (a ``go.Figure`` or its dict) as sent to the browser (JSON)."""
    if isinstance(figure, go.Figure):
        return len(figure.to_json(validate=False))
    return len(plotly.io.to_json(figure, validate=False))


def chart(figure, *, key: str, container=st, name: tuple = (),
          table: Callable[[], bytes] | None = None, share: float = 1.0, **kwargs):
    """``st.plotly_chart`` with the app's toolbar and an Export menu (PNG, SVG, PDF rendered on
    the server, offline HTML, CSV); returns the selection state when asked.

    Args:
        name: what the exported files are named after, besides the model and the text (e.g.
            kind, layer, head); default the chart's key.
        table: makes the CSV of what the chart shows, when the page has it exactly (else it
            is read from the figure); called only when the CSV is downloaded.
        share: the part of the page's width the chart gets (½ in one of two columns), for
            fitting its labels and rendering its exports at the width it is shown at.
    """
    figure = shown_figure(figure, share)
    sent = figure_bytes(figure)
    if sent > MAX_FIGURE_BYTES:  # refused here: Streamlit would show its raw size error
        container.warning(_("This chart would send {size} to the browser; this server sends "
                            "at most {most} a chart. Shorten the text, or choose a smaller "
                            "view.").format(size=rough_size(sent),
                                            most=rough_size(MAX_FIGURE_BYTES)),
                          icon=":material/block:")
        return None
    stem = export_name(*(name or (key,)))
    config = {**CHART_CONFIG, **export.plotly_language(), "toImageButtonOptions": {
        "format": "png", "scale": export.IMAGE_SCALE, "filename": stem}}
    hidden = _wide_only_css(figure, key)
    if hidden:
        container.html(f"<style>{hidden}</style>")
    event = container.plotly_chart(figure, key=key, config=config, **kwargs)
    files = export_files(figure, stem, table, width=figure.layout.width or shown_width(share),
                         theme=page_theme())
    st.session_state.setdefault(FIGURES, {}).update(files)
    with container.popover(_("Export"), icon=":material/download:"):
        st.caption(_("Rendered on the server at 3× for PNG; HTML works offline."))
        for label, (extension, mime) in EXPORTS.items():
            st.download_button(label, data=files[f"{stem}.{extension}"],
                               file_name=f"{stem}.{extension}", mime=mime,
                               key=f"{key}_export_{extension}", on_click="ignore")
    return event


def page_downloads() -> None:
    """The sidebar's downloads of a page that drew figures: every figure in one ZIP."""
    files = st.session_state.get(FIGURES) or {}
    if files:
        st.sidebar.download_button(
            _("All {count} figures of this page (ZIP)").format(count=len(files) // len(EXPORTS)),
            data=lambda: export.bundle({name: make() for name, make in files.items()}),
            file_name=f"{export_name('figures')}.zip", mime="application/zip",
            key="page_zip", on_click="ignore", icon=":material/folder_zip:")
