"""Every view in Chromium at 1280×800 for smollm2 and own-translator: drawn, no overlapping
labels, and a screenshot of each (in ``screenshots/`` or ``$SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.helpers import (
    CHROMIUM,
    ROOT,
    bring_into_view,
    choose_model,
    chromium_page,
    click_for_run,
    served_app,
    settled,
    wait_for_run,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
VIEWS = ["Explore", "Model view", "Head view", "Causal mask", "Rollout", "Head statistics",
         "Positions", "Shapes and costs"]

# Pairs of tick labels of one axis whose boxes overlap (more than 1 px), per plot.
OVERLAPS_JS = """
() => {
  const bad = [];
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    for (const cls of ['xtick', 'ytick']) {
      for (const axis of plot.querySelectorAll('.' + cls.charAt(0) + 'axislayer-above, '
                                               + '.' + cls.charAt(0) + 'axislayer-below')) {
        const boxes = [...axis.querySelectorAll('.' + cls + ' text')]
          .filter(t => t.textContent.trim() && t.getBBox().width > 0)
          .map(t => [t.textContent, t.getBoundingClientRect()]);
        for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i][1], b = boxes[j][1];
          const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (w > 1 && h > 1) bad.push(boxes[i][0] + ' / ' + boxes[j][0]);
        }
      }
    }
  }
  return bad;
}
"""


@pytest.mark.parametrize("spec", ["smollm2", "own-translator"])
def test_every_view_renders_readably(spec):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page(1280, 800) as page:
        page.goto(url, wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot", timeout=120_000)
        choose_model(page, spec)
        wait_for_run(page)
        for view in VIEWS:
            click_for_run(page, page.get_by_test_id("stSidebarNav").get_by_text(
                view, exact=True).click)
            settled(page)
            assert page.locator("[data-testid='stException']").count() == 0, view
            assert page.locator(".js-plotly-plot").count() >= 1, view
            overlaps = page.evaluate(OVERLAPS_JS)
            assert not overlaps, f"{view}: overlapping labels {overlaps[:5]}"
            slug = re.sub(r"\W+", "-", view.lower())
            page.screenshot(path=str(SHOTS / f"{spec}-{slug}.png"))
            plots = page.locator(".js-plotly-plot")
            if plots.count() > 1:
                bring_into_view(plots.nth(1))
                page.screenshot(path=str(SHOTS / f"{spec}-{slug}-2.png"))


PARAGRAPH = ("The cat sat on the mat because it was tired after chasing the mouse around the old "
             "house all morning, and the dog watched from the sofa while the rain fell. ") * 7


def _plot_background_is_transparent(page) -> bool:
    return page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot .bg')]
        .every(r => ['rgba(0, 0, 0, 0)', 'transparent'].includes(getComputedStyle(r).fill)
                    || getComputedStyle(r).fillOpacity === '0')""")


def test_the_landing_the_dark_theme_and_a_long_input_render_readably():
    """Screenshots of the landing at 1920×1080, Explore in the dark theme, and a 275-token
    paragraph on Explore and the head view (smollm2), with no overlapping labels."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url:
        with chromium_page(1920, 1080) as page:
            page.goto(url, wait_until="networkidle")
            page.wait_for_selector(".js-plotly-plot .ytick text", timeout=120_000)
            settled(page)
            page.get_by_text("Watch a translation").first.wait_for(timeout=120_000)
            assert page.locator("[data-testid='stException']").count() == 0
            assert not page.evaluate(OVERLAPS_JS)
            page.screenshot(path=str(SHOTS / "landing-1920.png"))
        with chromium_page(1280, 900, color_scheme="dark") as page:
            page.goto(f"{url}/explore", wait_until="networkidle")
            page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)
            settled(page)
            background = page.evaluate("getComputedStyle(document.querySelector("
                                       "'[data-testid=\"stApp\"]')).backgroundColor")
            assert background != "rgb(255, 255, 255)"  # the dark theme is on
            assert _plot_background_is_transparent(page)
            page.screenshot(path=str(SHOTS / "explore-dark.png"))
        with chromium_page(1280, 900) as page:
            page.goto(f"{url}/explore", wait_until="networkidle")
            page.wait_for_selector(".js-plotly-plot", timeout=120_000)
            choose_model(page, "smollm2")
            wait_for_run(page)
            box = page.get_by_role("textbox", name="Text", exact=True)
            box.fill(PARAGRAPH.strip())
            box.press("Control+Enter")
            page.wait_for_function(
                "document.querySelectorAll('.js-plotly-plot .xtick text').length > 10",
                timeout=240_000)
            settled(page)
            fitted = page.get_by_text("Colours fitted to this layer").first.text_content()
            assert "first token, 1.000" not in fitted  # not swamped by the first row or sink
            assert not page.evaluate(OVERLAPS_JS)
            page.screenshot(path=str(SHOTS / "long-explore.png"))
            click_for_run(page, page.get_by_test_id("stSidebarNav").get_by_text(
                "Head view", exact=True).click)
            settled(page)
            assert page.locator("[data-testid='stException']").count() == 0
            plot = page.locator(".js-plotly-plot").first
            bring_into_view(plot)
            assert plot.bounding_box()["height"] <= 920
            page.screenshot(path=str(SHOTS / "long-head-view.png"))
