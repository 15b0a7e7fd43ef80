"""The charts as a class sees them, measured in Chromium: in presentation mode at 1920×1080 and
1280×720, every SVG text of the Causal mask (marks and values in cells included, hovers aside)
18 px or more, no page wider than the screen, no two tick labels on top of each other; a
353-token text on Explore at 1024×768 and on a projector; the lessons 3.7 and 4.6 on both
projectors. Screenshots of each chart go to ``screenshots/`` (or ``$SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from tests.browser.test_screenshots import OVERLAPS_JS
from tests.helpers import (
    CHROMIUM,
    ROOT,
    bring_into_view,
    chromium_page,
    click_for_run,
    served_app,
    settled,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
FLOOR_PX = 18
SCREENS = [(1920, 1080), (1280, 720)]
MASK_TEXT = "猫坐在垫子上。"  # 12 tokens for smollm2: the most the mask writes values for
LONG_TEXT = ("The cat sat on the mat because it was tired after chasing the mouse around the old "
             "house all morning, and the dog watched from the sofa while the rain fell. ") * 10 \
    + "Then the children came home from school, hungry and loud. Yes."  # 353 tokens

# Every text an SVG of a chart draws (a <text> or a <tspan> with text of its own), shown, with
# its computed size; hover boxes left out. Values hidden on a narrow screen have no box.
CHART_TEXTS_JS = """
() => {
  const out = [];
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    for (const el of plot.querySelectorAll('svg text, svg tspan')) {
      if (el.closest('.hoverlayer')) continue;
      const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
      if (!own) continue;
      const box = el.getBoundingClientRect();
      if (!box.width || !box.height) continue;
      out.push({text: el.textContent.trim().slice(0, 24),
                px: parseFloat(getComputedStyle(el).fontSize)});
    }
  }
  return out;
}
"""
SCROLL_JS = "[document.scrollingElement.scrollWidth, window.innerWidth]"
# The lines of a chart's title that leave the chart or run under its toolbar.
TITLE_CLEAR_JS = """
plot => {
  const chart = plot.getBoundingClientRect(), bar = plot.querySelector('.modebar');
  const tool = bar ? bar.getBoundingClientRect() : null, bad = [];
  for (const line of plot.querySelectorAll('.gtitle, .gtitle tspan')) {
    const b = line.getBoundingClientRect();
    if (!b.width) continue;
    if (b.left < chart.left - 1 || b.right > chart.right + 1) {
      bad.push(['outside', line.textContent]);
    }
    if (tool && tool.width && b.right > tool.left && b.left < tool.right && b.top < tool.bottom
        && b.bottom > tool.top) bad.push(['under the toolbar', line.textContent]);
  }
  return bad;
}
"""
# The values written in a chart's cells that are shown (not hidden for a narrow screen).
VALUES_JS = """
() => [...document.querySelectorAll('.js-plotly-plot .heatmap-label text')]
  .filter(t => t.getBoundingClientRect().width > 0).length
"""


def _open(page, url: str, path: str, **params) -> None:
    page.goto(f"{url}/{path}?{urlencode(params, quote_via=quote)}", wait_until="networkidle")
    page.wait_for_selector("[data-testid='stMain'] .js-plotly-plot", timeout=240_000)
    settled(page)
    assert not page.query_selector("[data-testid='stException']"), path


def _shoot(page, name: str) -> None:
    """A screenshot of each chart on the page, whole (the screen made tall enough for it)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    plots = page.locator("[data-testid='stMain'] .js-plotly-plot")
    for i in range(plots.count()):
        plot = plots.nth(i)
        if not plot.is_visible():
            continue
        height = plot.bounding_box()["height"]
        page.set_viewport_size({"width": size["width"],
                                "height": max(size["height"], int(height) + 240)})
        bring_into_view(plot)
        plot.screenshot(path=str(SHOTS / f"{name}-{i}.png"))
    page.set_viewport_size(size)


def _readable(page, where: str) -> list[dict]:
    """The chart texts under 18 px, the page's horizontal overflow and overlapping labels, all
    asserted away; returns the texts measured."""
    texts = page.evaluate(CHART_TEXTS_JS)
    assert len(texts) > 20, where  # the charts were measured, not skipped
    small = [t for t in texts if t["px"] < FLOOR_PX]
    assert not small, (where, small[:8])
    scroll_width, inner = page.evaluate(SCROLL_JS)
    assert scroll_width <= inner, (where, scroll_width, inner)
    overlaps = page.evaluate(OVERLAPS_JS)
    assert not overlaps, (where, overlaps[:5])
    return texts


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_causal_mask_reads_from_the_back_of_the_room(width, height):
    with served_app() as url, chromium_page(width, height) as page:
        _open(page, url, "mask", lang="zh", present=1, model="smollm2", text=MASK_TEXT)
        steps = []
        for step in range(2, 5):  # the class is shown ① → ④, one step at a time
            started = time.monotonic()
            click_for_run(page, page.locator(".st-key-mask_step_next button")
                          .filter(visible=True).first.click)
            settled(page)
            steps.append(round(time.monotonic() - started, 1))
            _readable(page, f"mask step {step}")
        texts = _readable(page, "mask")
        marks = [t for t in texts if t["text"] in ("✓", "✗", "−∞")]
        assert len(marks) >= 12 * 12, len(marks)  # every cell of ② and the masked ones of ③
        assert all(t["px"] >= FLOOR_PX for t in marks)
        values = page.evaluate(VALUES_JS)
        if width >= 1920:
            assert values >= 3 * 12 * 6, values  # ①, ③ and ④ hold their values
        plot = page.locator(".js-plotly-plot").first.bounding_box()
        assert plot["width"] <= width  # the 2 × 2 panels fit the screen's width
        _shoot(page, f"projector-figures-mask-{width}")
        (SHOTS / f"projector-figures-mask-{width}-steps.txt").write_text(
            f"seconds a step took (② ③ ④): {steps}\n")


def test_a_long_input_is_legible_on_a_small_screen_and_on_a_projector():
    with served_app() as url:
        with chromium_page(1024, 768) as page:
            _open(page, url, "explore", lang="en", model="smollm2", text=LONG_TEXT)
            assert "354×354 tokens" in page.inner_text("[data-testid='stMain']") or \
                page.locator(".gtitle").first.text_content().count("×") >= 1
            overlaps = page.evaluate(OVERLAPS_JS)
            assert not overlaps, overlaps[:5]
            scroll_width, inner = page.evaluate(SCROLL_JS)
            assert scroll_width <= inner
            # the title and its subtitle stay inside the chart and out from under the toolbar
            for plot in page.locator(".js-plotly-plot").filter(visible=True).all():
                bring_into_view(plot)
                plot.hover()
                clash = plot.evaluate(TITLE_CLEAR_JS)
                assert not clash, clash
            _shoot(page, "projector-figures-long-1024")
        for width, height in SCREENS:
            with chromium_page(width, height) as page:
                _open(page, url, "explore", lang="zh", present=1, model="smollm2",
                      text=LONG_TEXT)
                _readable(page, f"explore {width}")
                _shoot(page, f"projector-figures-long-{width}")


@pytest.mark.parametrize("width, height", SCREENS)
def test_the_lessons_three_families_and_multi_head_read_on_a_projector(width, height):
    with served_app() as url, chromium_page(width, height) as page:
        _open(page, url, "lesson_families", lang="en", present=1)
        click_for_run(page, page.get_by_role("button", name="Load all three models").click)
        page.wait_for_function(
            "document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot').length >= 3",
            timeout=240_000)
        settled(page)
        texts = _readable(page, "3.7")
        assert [t for t in texts if t["text"] in ("✓", "✗")], "the masks' marks are written"
        _shoot(page, f"projector-figures-families-{width}")
        _open(page, url, "lesson_multihead", lang="zh", present=1, step=3)
        _readable(page, "4.6")
        assert page.locator("[data-testid='stMain'] .js-plotly-plot").count() == 3
        _shoot(page, f"projector-figures-multihead-{width}")
