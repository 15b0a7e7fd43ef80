"""The classroom in Chromium: every page in 中文 and in presentation mode at 1920×1080 without
overlapping tick labels (screenshots kept), and a link that reopens the same head in a fresh
browser."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

import i18n
from tests.browser.test_screenshots import OVERLAPS_JS
from tests.helpers import (
    CHROMIUM,
    ROOT,
    choose,
    chromium_page,
    click_for_run,
    served_app,
    settled,
    wait_for_run,
    watch_runs,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
PAGES = ["", "translate", "explore", "model_view", "head_view", "mask", "rollout", "stats",
         "positions", "shapes"]
# What the first chart of a page draws: its title, its axes' titles and token labels, and the
# fonts of its title and tick labels as the browser measured them.
FIRST_CHART_JS = """
() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd) return null;
  const L = gd.layout, size = sel => {
    const el = gd.querySelector(sel);
    return el ? parseFloat(getComputedStyle(el).fontSize) : null;
  };
  return {title: (L.title && L.title.text) || '',
          x: L.xaxis && L.xaxis.ticktext, y: L.yaxis && L.yaxis.ticktext,
          xtitle: L.xaxis && L.xaxis.title && L.xaxis.title.text,
          title_px: size('.gtitle'), tick_px: size('.xtick text')};
}
"""


def _open(page, url: str) -> None:
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("[data-testid='stMain']", timeout=120_000)
    settled(page)


@pytest.mark.parametrize("model, text, present", [
    ("own-translator", "The cat sat on the mat", True),
    ("smollm2", "猫坐在垫子上。", True),
    ("own-translator", "The cat sat on the mat", False),
])
def test_every_page_in_chinese_reads_from_the_back_of_the_room(model, text, present):
    SHOTS.mkdir(parents=True, exist_ok=True)
    mode = "present" if present else "zh"
    measured = 0
    with served_app() as url, chromium_page(1920, 1080) as page:
        for path in PAGES:
            params = {"lang": "zh", "present": int(present), "model": model, "text": text}
            _open(page, f"{url}/{path}?{urlencode(params, quote_via=quote)}")
            assert not page.query_selector("[data-testid='stException']"), path
            collapsed = page.get_attribute("[data-testid='stSidebar']", "data-collapsed")
            assert collapsed == ("true" if present else "false"), path
            assert page.evaluate("document.documentElement.lang") == "zh-CN"
            overlaps = page.evaluate(OVERLAPS_JS)
            assert not overlaps, (path, overlaps[:5])
            chart = page.evaluate(FIRST_CHART_JS)
            if present and chart is not None and chart["tick_px"]:
                measured += 1
                assert chart["tick_px"] >= 18, (path, chart)
                if chart["title"]:
                    assert chart["title_px"] >= 24, (path, chart)
            page.screenshot(path=str(SHOTS / f"classroom-{mode}-{model}-{path or 'start'}.png"),
                            full_page=True)
    assert not present or measured >= len(PAGES) - 2  # the fonts were measured, not skipped


def test_a_link_to_a_page_that_does_not_exist_says_so_and_opens_the_start_page():
    with served_app() as url, chromium_page(1280, 800) as page:
        _open(page, f"{url}/no_such_page?lang=zh")
        assert "no_such_page" in page.inner_text("[data-testid='stMain']")
        assert "从这里开始" in page.inner_text("[data-testid='stSidebar']")
        assert page.query_selector(".js-plotly-plot")  # the start page's alignment
        assert page.evaluate("document.documentElement.lang") == "zh-CN"


def test_a_link_reopens_the_same_head_in_a_fresh_browser():
    from playwright.sync_api import sync_playwright

    from tests.helpers import CHROMIUM_ARGS

    text = "The cat sat on the mat because it was tired"
    with served_app() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            first = browser.new_context(viewport={"width": 1920, "height": 1080})
            page = watch_runs(first.new_page())
            _open(page, f"{url}/explore")
            click_for_run(page, page.get_by_text("中文", exact=True).click)
            _choose(page, "模型", "smollm2")
            box = page.get_by_label("文本", exact=True)
            box.fill(text)
            box.press("Control+Enter")
            wait_for_run(page)
            _choose(page, "层", "7")
            with i18n.use("zh"):
                _choose(page, "头", i18n._("{head} (K/V head {kv_head})").format(head=4,
                                                                                kv_head=1))
            shown = page.evaluate(FIRST_CHART_JS)
            link = page.url
            assert "layer=7" in link and "head=4" in link and "lang=zh" in link
            code = page.locator("[data-testid='stSidebar'] code").first.text_content()
            assert "layer=7" in code and "head=4" in code
            first.close()

            fresh = browser.new_context(viewport={"width": 1920, "height": 1080})
            page = watch_runs(fresh.new_page())
            _open(page, link)
            # the heatmap the comparison below reads
            page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
            settled(page)
            again = page.evaluate(FIRST_CHART_JS)
            assert again == shown
            assert "7" in again["title"] and "4" in again["title"]
            assert again["x"][:3] == shown["x"][:3] and len(again["x"]) > 5
            page.screenshot(path=str(SHOTS / "classroom-link-reopened.png"))
        finally:
            browser.close()


def _choose(page, label: str, option: str) -> None:
    choose(page, label, option)
    wait_for_run(page)
