"""Exports for slides: rendered at the width the chart is shown at, with its labels fitted to
that width, on an opaque background in the page theme's colours (a grey label stays readable
on a dark slide)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import viz
from tests.helpers import CHROMIUM
from viz import export, present
from viz.sizes import PROJECTOR_CHART_PX, SCREEN_CHART_PX
from viz.style import THEME_COLORS

TOKENS = [f"word{i}" for i in range(27)]  # 27 keys collided at the old 900 px


def _heatmap(share: float = 1.0, projector: bool = False):
    n = len(TOKENS)
    allowed = np.tril(np.ones((n, n), bool))
    weights = allowed / allowed.sum(1, keepdims=True)
    figure = viz.attention_heatmap(weights, TOKENS, TOKENS, allowed=allowed, title="layer 0",
                                   special=([0], [0]))
    if projector:
        return present.for_projector(figure, width_px=PROJECTOR_CHART_PX * share)
    return present.for_screen(figure, width_px=SCREEN_CHART_PX * share)


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_slide_figure_is_opaque_in_the_themes_colours_at_the_width_shown(theme):
    shown = _heatmap(share=0.5)
    slide = export.for_slide(shown, SCREEN_CHART_PX * 0.5, theme)
    colors = THEME_COLORS[theme]
    assert slide.layout.width == round(SCREEN_CHART_PX * 0.5)
    assert slide.layout.height == round(shown.layout.height)
    assert slide.layout.paper_bgcolor == slide.layout.plot_bgcolor == colors["background"]
    assert slide.layout.font.color == colors["text"]
    assert shown.layout.paper_bgcolor == "rgba(0,0,0,0)"  # the page's figure is left alone
    # the labels are those fitted to that width
    assert slide.layout.xaxis.ticktext == shown.layout.xaxis.ticktext
    with pytest.raises(ValueError, match="unknown theme"):
        export.for_slide(shown, theme="sepia")


def test_the_page_renders_each_chart_at_the_width_it_is_shown_at():
    from app_pages.frame import charts

    files = charts.export_files(_heatmap(), "heatmap", width=SCREEN_CHART_PX, theme="dark")
    assert sorted(files) == [f"heatmap.{e}" for e in ("csv", "html", "pdf", "png", "svg")]
    page = files["heatmap.html"]().decode("utf-8")
    assert f'"width":{SCREEN_CHART_PX}' in page.replace(" ", "")
    assert THEME_COLORS["dark"]["background"] in page


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("share, projector", [(1.0, False), (0.5, False), (1.0, True)])
@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="kaleido needs Chromium")
def test_an_exported_png_is_opaque_in_the_themes_colour_at_the_shown_width(theme, share,
                                                                           projector):
    from PIL import Image

    from app_pages.frame import charts

    width = (PROJECTOR_CHART_PX if projector else SCREEN_CHART_PX) * share
    files = charts.export_files(_heatmap(share, projector), "heatmap", width=width, theme=theme)
    image = Image.open(io.BytesIO(files["heatmap.png"]()))
    # at the shown width × 3, or at most MAX_PNG_PX wide (never below the shown width)
    expected = min(round(width) * export.IMAGE_SCALE, max(round(width), export.MAX_PNG_PX))
    assert abs(image.width - expected) <= 1
    rgba = image.convert("RGBA")
    background = _rgb(THEME_COLORS[theme]["background"])
    for corner in ((0, 0), (image.width - 1, 0), (0, image.height - 1),
                   (image.width - 1, image.height - 1)):
        pixel = rgba.getpixel(corner)
        assert pixel[3] == 255, (corner, pixel)  # opaque
        assert max(abs(a - b) for a, b in zip(pixel[:3], background)) <= 2, (corner, pixel)
    alpha = np.asarray(rgba)[..., 3]
    assert alpha.min() == 255  # nothing in it is see-through
    # text in the theme's own colour is drawn on it (not grey on nothing)
    pixels = np.asarray(rgba)[..., :3].reshape(-1, 3)
    text = np.array(_rgb(THEME_COLORS[theme]["text"]))
    assert (np.abs(pixels - text).max(axis=1) <= 40).sum() > 200


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="kaleido needs Chromium")
def test_an_exported_svg_keeps_every_fitted_label_and_its_background():
    import xml.etree.ElementTree as ElementTree

    shown = _heatmap()
    root = ElementTree.fromstring(export.image(shown, "svg", width=SCREEN_CHART_PX,
                                               theme="dark"))
    assert root.get("width") == str(SCREEN_CHART_PX)
    texts = [t.text for t in root.iter() if t.tag.endswith("text")]
    for label in shown.layout.xaxis.ticktext[1:]:  # the first is a special token's markup
        assert label in texts
    background = ", ".join(str(c) for c in _rgb(THEME_COLORS["dark"]["background"]))
    assert f"rgb({background})" in ElementTree.tostring(root, encoding="unicode")


def test_a_figure_read_back_from_its_json_still_gives_its_table():
    """A heatmap whose z came back from JSON as Plotly's typed array (``bdata``): the page's
    ZIP failed on it, so the ZIP never downloaded."""
    import base64

    import numpy as np
    import plotly.graph_objects as go

    z = np.array([[0.25, 0.75], [1.0, 0.0]])
    typed = {"dtype": "f8", "bdata": base64.b64encode(z.tobytes()).decode(), "shape": "2, 2"}
    figure = go.Figure(go.Heatmap(z=typed))
    rows = export.figure_table(figure).decode("utf-8-sig").splitlines()
    assert [float(v) for v in rows[1].split(",")[1:]] == [0.25, 0.75]
    assert [float(v) for v in rows[2].split(",")[1:]] == [1.0, 0.0]
