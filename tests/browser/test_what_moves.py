"""What moves and the sink toggle in headless Chromium at 1920 × 1080 (a projector), in
presentation mode and in Chinese: the four panels, the ablation, the query-key map all drawn
with nothing thrown; a query clicked in the map opens its row in Explore; Explore with the sink
left out shows the note. Screenshots are written for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from tests.helpers import (
    CHROMIUM,
    ROOT,
    bring_into_view,
    chromium_page,
    click_for_run,
    served_app,
    settled,
    wait_for_run,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run "
                       "installs it)"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
TEXT = quote("The cat sat on the mat.")
PAGE = (f"what_moves?lang=zh&present=1&model=smollm2&text={TEXT}&kind=decoder.self&layer=3"
        "&head=2")


@pytest.fixture(scope="module")
def url():
    with served_app() as served:
        yield served


def test_what_moves_draws_every_view_on_a_projector_in_chinese(url):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium_page(1920, 1080) as page:
        page.goto(f"{url}/{PAGE}", wait_until="networkidle")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 5",
                               timeout=240_000)
        settled(page)
        assert page.locator("[data-testid='stException']").count() == 0
        assert page.get_by_text("真正传递了什么").count() >= 1
        plots = page.locator(".js-plotly-plot")
        # the raw panel has no outline; the others outline the rows whose largest key moved
        assert plots.nth(0).locator(".shapelayer path").count() == 0
        assert plots.nth(1).locator(".shapelayer path").count() >= 1
        for i in range(4):
            box = plots.nth(i).bounding_box()
            assert box["width"] > 500 and box["height"] > 300, box
            ticks = plots.nth(i).locator(".xtick text").all_text_contents()
            assert [t.strip() for t in ticks[:3]] == ["The", "cat", "sat"], ticks
        page.screenshot(path=str(SHOTS / "what-moves-zh-1920-panels.png"))
        bring_into_view(plots.nth(2))
        page.screenshot(path=str(SHOTS / "what-moves-zh-1920-zeroing-rollout.png"))
        qk = plots.nth(4)
        bring_into_view(qk)
        assert qk.locator(".scatterlayer .trace").count() == 2
        page.screenshot(path=str(SHOTS / "what-moves-zh-1920-map.png"))
        # a query clicked in the map opens its row in Explore, outlined
        point = qk.locator(".scatterlayer .trace").first.locator("path.point").nth(4)
        click_for_run(page, lambda: point.click(force=True))
        page.wait_for_function("() => window.location.pathname.endsWith('/explore')",
                               timeout=120_000)
        wait_for_run(page)
        settled(page)
        assert urlsplit(page.url).path.endswith("/explore")
        assert page.get_by_text("已框出").count() + page.get_by_text("框出").count() >= 1
        page.screenshot(path=str(SHOTS / "what-moves-zh-1920-opened-in-explore.png"))


def test_leaving_heads_out_and_ranking_them_in_the_browser(url):
    with chromium_page(1920, 1080) as page:
        page.goto(f"{url}/what_moves?lang=zh&present=1&kind=decoder.cross&layer=2&head=1",
                  wait_until="networkidle")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4",
                               timeout=240_000)
        settled(page)
        toggle = page.get_by_text("给本层每个头排序")
        bring_into_view(toggle)
        click_for_run(page, lambda: toggle.click())
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 5",
                               timeout=240_000)
        settled(page)
        assert page.locator("[data-testid='stException']").count() == 0
        bars = page.locator(".js-plotly-plot").nth(3)
        assert bars.locator(".xtick text").count() == 4
        bring_into_view(bars)
        page.screenshot(path=str(SHOTS / "what-moves-zh-1920-ranking.png"))


def test_explore_with_the_sink_left_out_says_what_it_left_out(url):
    with chromium_page(1920, 1080) as page:
        page.goto(f"{url}/explore?lang=zh&present=1&model=smollm2&text={TEXT}&sink=1",
                  wait_until="networkidle")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 2",
                               timeout=240_000)
        settled(page)
        assert page.locator("[data-testid='stException']").count() == 0
        assert page.get_by_text("已去掉注意力汇聚点", exact=False).count() >= 1
        page.screenshot(path=str(SHOTS / "explore-sink-left-out-zh-1920.png"))
