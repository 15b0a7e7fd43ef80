"""Charts on a page: every figure drawn through :func:`chart` (bounded in bytes, restyled for
the theme and presentation mode) with its exports, and the page's ZIP of them."""

from __future__ import annotations

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
from viz.sizes import PROJECTOR_PLOT_PX

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


def export_files(figure, stem: str, table: Callable[[], bytes] | None = None
                 ) -> dict[str, Callable[[], bytes]]:
    """``{file name: how to make it}`` for one figure (a ``go.Figure`` or its dict): PNG, SVG,
    PDF, offline HTML, CSV. Nothing is made until asked."""

    def as_figure() -> go.Figure:
        return figure if isinstance(figure, go.Figure) else go.Figure(figure)

    makers = {f"{stem}.png": lambda: export.image(as_figure(), "png"),
              f"{stem}.svg": lambda: export.image(as_figure(), "svg"),
              f"{stem}.pdf": lambda: export.image(as_figure(), "pdf"),
              f"{stem}.html": lambda: export.html(as_figure(), stem),
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


def shown_figure(figure, share: float = 1.0):
    """``figure`` as this session shows it: in the chosen palette, and restyled for a
    projector in presentation mode (``share``: the part of the page's width the chart gets)."""
    palette = st.session_state.get("palette", "default")
    if palette in present.PALETTES and palette != "default":
        figure = present.with_palette(figure, palette)
    if presenting():
        figure = present.for_projector(figure, width_px=PROJECTOR_PLOT_PX * share)
    return figure


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
            fitting its labels in presentation mode.
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
    config = {**CHART_CONFIG, "toImageButtonOptions": {
        "format": "png", "scale": export.IMAGE_SCALE, "filename": stem}}
    event = container.plotly_chart(figure, key=key, config=config, **kwargs)
    files = export_files(figure, stem, table)
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
