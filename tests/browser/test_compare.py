"""The Compare page in Chromium: its sentence boxes in view as it opens, below Streamlit's
header, and its heatmaps wide enough to read: one under another on a 1024 px screen, side by
side on a wide one (screenshots in screenshots/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app_pages.views.compare import PANEL_PX
from tests.helpers import chromium_page, served_app, settled

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
READABLE_PX = 250  # the least width of a heatmap's cells (its plot area): at 1024 px it was 66
ABREAST_PX = 200  # ...and side by side, where the difference's paired labels take room
CHARTS = ("cmp_a_heatmap", "cmp_b_heatmap", "cmp_difference")

# Each chart's box on the page and its plot area's width (Plotly's own layout, once drawn).
BOXES_JS = """keys => keys.map(key => {
  const chart = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const box = chart.getBoundingClientRect();
  return {x: box.x, y: box.y, width: box.width, plot: chart._fullLayout._size.w};
})"""


@pytest.mark.parametrize("width, height, scheme", [(1024, 768, "light"), (1920, 1080, "dark")])
def test_the_sentence_boxes_are_in_view_and_the_heatmaps_readable(width, height, scheme):
    SHOTS.mkdir(exist_ok=True)
    with served_app() as url, chromium_page(width, height, scheme) as page:
        page.goto(f"{url}/compare")
        settled(page)
        assert not page.query_selector("[data-testid='stException']")
        header = page.get_by_test_id("stHeader").bounding_box()
        for label in ("Sentence A", "Sentence B"):  # in view as opened: nothing scrolled
            box = page.get_by_label(label, exact=True).bounding_box()
            assert box["y"] >= header["y"] + header["height"], (label, box, header)
            assert box["y"] + box["height"] <= height, (label, box)
            assert box["width"] >= 300, (label, box)  # the example sentences show whole
        assert page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTop"
                             " + window.scrollY") == 0
        page.screenshot(path=str(SHOTS / f"compare-top-{width}x{height}-{scheme}.png"))

        charts = page.evaluate(BOXES_JS, list(CHARTS))
        tops = {round(chart["y"]) for chart in charts}
        if width == 1024:  # one under another, each as wide as the page
            assert len(tops) == 3
            assert len({round(chart["x"]) for chart in charts}) == 1
            assert all(chart["plot"] > READABLE_PX for chart in charts), charts
        else:  # side by side, each at least a panel wide
            assert len(tops) == 1
            assert all(chart["width"] >= PANEL_PX for chart in charts), charts
            assert all(chart["plot"] > ABREAST_PX for chart in charts), charts
        main = page.get_by_test_id("stMain")
        page.set_viewport_size({"width": width, "height": int(main.evaluate(
            "main => main.scrollHeight")) + 40})
        settled(page)
        page.screenshot(path=str(SHOTS / f"compare-{width}x{height}-{scheme}.png"))
