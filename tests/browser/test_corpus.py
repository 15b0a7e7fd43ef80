"""The Corpus page in Chromium: a file of sentences uploaded, the corpus heatmap drawn, a row
of the sentence table opened in Explore (screenshots in screenshots/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import (
    bring_into_view,
    chromium_page,
    click_for_run,
    selected,
    served_app,
    settled,
    wait_for_run,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
ANIMALS = ("cat", "dog", "bird", "fox", "cow", "pig")
PLACES = ("mat", "sofa", "table", "bed", "box")
SENTENCES = [f"the {a} sat on the {p} because it was tired" for a in ANIMALS for p in PLACES]


@pytest.mark.parametrize("width, height, scheme", [(1920, 1080, "light"), (1024, 768, "dark")])
def test_a_batch_uploaded_in_chromium_is_drawn_and_a_row_opens_in_explore(
        tmp_path, width, height, scheme):
    SHOTS.mkdir(exist_ok=True)
    upload = tmp_path / "class.txt"
    upload.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    with served_app() as url, chromium_page(width, height, scheme) as page:
        page.goto(f"{url}/corpus")
        wait_for_run(page)
        page.get_by_test_id("stMain").locator("input[type='file']").set_input_files(str(upload))
        run = page.get_by_role("button", name="Run 30 sentences")
        run.wait_for(timeout=120_000)
        run.click()
        page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=240_000)
        settled(page)
        main = page.inner_text("[data-testid='stMain']")
        assert "30 of 30 sentences ran on own-translator" in main
        assert not page.query_selector("[data-testid='stException']")
        title = page.locator(".js-plotly-plot .gtitle").first.text_content()
        assert "mean over 30 sentences" in title
        page.screenshot(path=str(SHOTS / f"corpus-{width}x{height}-{scheme}.png"),
                        full_page=True)

        grid = page.get_by_test_id("stDataFrame").last
        bring_into_view(grid)
        box = grid.bounding_box()
        # the table's third row, on its row-selection column (the canvas's left edge)
        click_for_run(page, lambda: page.mouse.click(box["x"] + 12,
                                                     box["y"] + 35 + 35 // 2 + 35 * 2))
        opened = page.get_by_role("button", name="Open sentence 3")
        try:
            opened.wait_for(timeout=120_000)
        except Exception:
            page.screenshot(path=str(SHOTS / "corpus-row-not-selected.png"), full_page=True)
            raise
        assert selected(page, "View") == "Explore"
        click_for_run(page, opened.click)
        page.get_by_role("heading", name="Explore attention").wait_for(timeout=120_000)
        settled(page)
        assert page.get_by_label("Text", exact=True).input_value() == SENTENCES[2]
        ticks = " ".join(page.locator(".js-plotly-plot").first.locator(
            ".xtick text").all_text_contents())
        assert "table" in ticks and "cat" in ticks
        page.screenshot(path=str(SHOTS / f"corpus-opened-{width}x{height}-{scheme}.png"))


PARTIAL = ("the cat sat on the mat because it was tired\nthe zebra flew\n"
           "the dog sat on the bed because it was tired")


def test_a_partial_run_is_shown_as_a_warning_not_a_success():
    from urllib.parse import urlencode

    with served_app() as url, chromium_page(1024, 768) as page:
        page.goto(f"{url}/corpus?{urlencode({'sentences': PARTIAL})}")  # pasted, by its link
        wait_for_run(page)
        click_for_run(page, page.get_by_role("button", name="Run 3 sentences").click)
        page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=240_000)
        settled(page)
        warning = page.get_by_test_id("stAlertContentWarning")
        assert "2 of 3 sentences ran on own-translator" in warning.inner_text()
        assert not page.get_by_test_id("stAlertContentSuccess").count()
        assert not page.query_selector("[data-testid='stException']")
        page.screenshot(path=str(SHOTS / "corpus-partial-1024x768-light.png"), full_page=True)
