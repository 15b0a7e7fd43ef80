"""The served app in headless Chromium: the Explore page draws a readable heatmap."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, ROOT, chromium_page, served_app

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run "
                       "installs it)"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))


def test_explore_page_shows_the_seed_sentence_heatmap_with_six_distinct_labels():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page() as page:
        page.goto(url, wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)
        page.wait_for_timeout(1500)
        first_plot = page.locator(".js-plotly-plot").first
        labels = first_plot.locator(".xtick text").all_text_contents()
        assert labels == ["The", "cat", "sat", "on", "the", "mat"]
        assert first_plot.locator(".ytick text").all_text_contents() == labels
        assert page.locator("[data-testid='stException']").count() == 0
        box = first_plot.bounding_box()
        assert box["width"] > 300 and box["height"] > 300
        page.screenshot(path=str(SHOTS / "explore.png"))
        page.locator(".js-plotly-plot").nth(1).scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "explore-grid.png"))


def test_translate_page_shows_translation_and_four_readable_figures():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/translate", wait_until="networkidle")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4",
                               timeout=120_000)
        page.wait_for_timeout(1500)
        assert page.get_by_text("猫 坐 在 垫子 上").count() >= 1
        assert page.locator("[data-testid='stException']").count() == 0
        cross = page.locator(".js-plotly-plot").nth(1)
        assert cross.locator(".ytick text").all_text_contents() == [
            "The", "cat", "sat", "on", "the", "mat"]
        page.screenshot(path=str(SHOTS / "translate.png"))
        page.locator(".js-plotly-plot").nth(1).scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "translate-middle.png"))
        page.locator(".js-plotly-plot").nth(3).scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "translate-bottom.png"))


def test_a_deep_link_on_a_fresh_server_runs_inside_the_apps_frame():
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/translate", wait_until="networkidle")
        page.wait_for_selector("[data-testid='stSidebarNav']", timeout=120_000)
        nav = page.locator("[data-testid='stSidebarNav'] a").all_text_contents()
        names = [re.sub(r"^\W+", "", n.strip()) for n in nav]
        assert names[0] == "Explore" and "Translate" in names and "Causal mask" in names
        # the frame's shared sidebar is there too
        page.get_by_text("Device", exact=True).first.wait_for(timeout=60_000)
