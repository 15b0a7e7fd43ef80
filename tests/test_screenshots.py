"""Every view in Chromium at 1280×800 for smollm2 and own-translator: drawn, no overlapping
labels, and a screenshot of each (in ``screenshots/`` or ``$SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.helpers import CHROMIUM, ROOT, chromium_page, served_app

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


def _choose_model(page, spec: str) -> None:
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name=spec, exact=True).click()
    page.wait_for_timeout(500)


def _wait_for_run(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')",
                           timeout=240_000)
    page.wait_for_timeout(1200)


@pytest.mark.parametrize("spec", ["smollm2", "own-translator"])
def test_every_view_renders_readably(spec):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page(1280, 800) as page:
        page.goto(url, wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot", timeout=120_000)
        _choose_model(page, spec)
        _wait_for_run(page)
        for view in VIEWS:
            page.get_by_test_id("stSidebarNav").get_by_text(view, exact=True).click()
            _wait_for_run(page)
            assert page.locator("[data-testid='stException']").count() == 0, view
            assert page.locator(".js-plotly-plot").count() >= 1, view
            overlaps = page.evaluate(OVERLAPS_JS)
            assert not overlaps, f"{view}: overlapping labels {overlaps[:5]}"
            slug = re.sub(r"\W+", "-", view.lower())
            page.screenshot(path=str(SHOTS / f"{spec}-{slug}.png"))
            plots = page.locator(".js-plotly-plot")
            if plots.count() > 1:
                plots.nth(1).scroll_into_view_if_needed()
                page.wait_for_timeout(400)
                page.screenshot(path=str(SHOTS / f"{spec}-{slug}-2.png"))
