"""The served app in headless Chromium: the landing, Explore in both themes and on a long input,
Translate, deep links, clicks between views, uploads."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.helpers import (
    CHROMIUM,
    ROOT,
    bring_into_view,
    choose,
    choose_model,
    chromium_page,
    click_for_run,
    selected,
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


def test_explore_page_shows_the_seed_sentence_heatmap_with_six_distinct_labels():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/explore", wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)
        settled(page)
        first_plot = page.locator(".js-plotly-plot").first
        labels = first_plot.locator(".xtick text").all_text_contents()
        assert labels == ["The", "cat", "sat", "on", "the", "mat"]
        assert first_plot.locator(".ytick text").all_text_contents() == labels
        assert page.locator("[data-testid='stException']").count() == 0
        box = first_plot.bounding_box()
        assert box["width"] > 300 and box["height"] > 300
        page.screenshot(path=str(SHOTS / "explore.png"))
        bring_into_view(page.locator(".js-plotly-plot").nth(1))
        page.screenshot(path=str(SHOTS / "explore-grid.png"))


def test_translate_page_shows_translation_and_four_readable_figures():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/translate", wait_until="networkidle")
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4",
                               timeout=120_000)
        settled(page)
        assert page.get_by_text("猫 坐 在 垫子 上").count() >= 1
        assert page.locator("[data-testid='stException']").count() == 0
        cross = page.locator(".js-plotly-plot").nth(1)
        assert cross.locator(".ytick text").all_text_contents() == [
            "The", "cat", "sat", "on", "the", "mat"]
        page.screenshot(path=str(SHOTS / "translate.png"))
        bring_into_view(page.locator(".js-plotly-plot").nth(1))
        page.screenshot(path=str(SHOTS / "translate-middle.png"))
        bring_into_view(page.locator(".js-plotly-plot").nth(3))
        page.screenshot(path=str(SHOTS / "translate-bottom.png"))


def test_a_deep_link_on_a_fresh_server_runs_inside_the_apps_frame():
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/translate", wait_until="networkidle")
        page.wait_for_selector("[data-testid='stSidebarNav']", timeout=120_000)
        nav = page.locator("[data-testid='stSidebarNav'] a").all_text_contents()
        names = [re.sub(r"^\W+", "", n.strip()) for n in nav]
        assert names[:3] == ["Start here", "Translate", "Explore"] and "Causal mask" in names
        # the frame's shared sidebar is there too
        page.get_by_text("Device", exact=True).first.wait_for(timeout=60_000)


def _plot_area(page, index: int = 0):
    page.wait_for_selector(".js-plotly-plot .nsewdrag", timeout=120_000)
    settled(page)  # drawn where it stays: the click lands on the cell it aims at
    return page.locator(".js-plotly-plot .nsewdrag").nth(index).bounding_box()


def test_clicking_a_model_view_tile_opens_that_head_in_explore():
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/model_view", wait_until="networkidle")
        box = _plot_area(page)
        # own-translator's encoder: 3 layers × 4 heads of 6×6 cells with 1-cell gaps
        x = box["x"] + box["width"] * (2 * 7 + 2.5) / 28
        y = box["y"] + box["height"] * (1 * 7 + 2.5) / 21
        click_for_run(page, lambda: (page.mouse.move(x, y), page.mouse.click(x, y)))
        # (a title may wrap into lines of its own: its words are compared without spaces)
        page.wait_for_function(
            "() => [...document.querySelectorAll('.gtitle')].some(t => t.textContent"
            ".replace(/\\s/g, '') === 'encoderself-attention·layer1·head2')", timeout=120_000)
        assert urlsplit(page.url).path.endswith("/explore")  # (the query holds the view)
        nav = page.get_by_test_id("stSidebarNav").get_by_text("Model view", exact=True)
        click_for_run(page, nav.click)  # the run the page switch asked for, and any it led to
        assert urlsplit(page.url).path.endswith("/model_view")  # the old click does not fire again


def test_clicking_a_token_in_the_head_view_isolates_its_lines():
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/head_view", wait_until="networkidle")
        _plot_area(page)
        traces = page.locator(".js-plotly-plot .scatterlayer .trace")
        token = traces.nth(traces.count() - 2).locator(".point").nth(2)  # the left column
        token.scroll_into_view_if_needed()  # (below the text box at the top of the page)
        box = token.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        click_for_run(page, lambda: (page.mouse.move(x, y), page.mouse.click(x, y)))
        focus = page.locator("input[aria-label='Focus on one token']")
        page.wait_for_function(
            "() => document.querySelector(\"input[aria-label='Focus on one token']\")"
            "?.value === '2: sat'", timeout=60_000)
        assert focus.input_value() == "2: sat"


def _explore_with_upload(page, url: str, upload: Path) -> None:
    """Open Explore, upload ``upload`` under the text box and wait until the page says it
    reads it."""
    upload.write_text("The dog slept under the table", encoding="utf-8")
    page.goto(f"{url}/explore", wait_until="networkidle")
    page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)
    page.locator("input[type='file']").first.set_input_files(str(upload))  # (folded at the top)
    page.get_by_text(f"Analysing the uploaded file {upload.name}").wait_for(timeout=60_000)


def test_an_uploaded_text_file_is_analysed(tmp_path):
    with served_app() as url, chromium_page() as page:
        _explore_with_upload(page, url, tmp_path / "story.txt")
        # the caption comes before the figure in the same run: wait for the figure to redraw
        page.wait_for_function(
            "document.querySelector('.js-plotly-plot .xtick text')?.textContent === 'dog'"
            " || document.querySelectorAll('.js-plotly-plot .xtick text')[1]?.textContent"
            " === 'dog'", timeout=60_000)
        labels = page.locator(".js-plotly-plot").first.locator(".xtick text").all_text_contents()
        assert labels == ["The", "dog", "slept", "under", "the", "table"]
        assert page.get_by_role("textbox", name="Text", exact=True).is_disabled()


def test_after_switching_models_the_selectors_show_what_the_page_draws():
    """Once, smollm2's head 8 and "K/V head" labels stayed on screen after switching to a
    model with fewer heads, while the page drew another head."""
    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/explore", wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot", timeout=120_000)
        choose_model(page, "smollm2")
        wait_for_run(page)
        choose(page, "Head", "8 (K/V head 2)")
        wait_for_run(page)
        choose_model(page, "own-translator")
        wait_for_run(page)
        kind, layer, head = (selected(page, label) for label in ("Attention", "Layer", "Head"))
        assert kind == "decoder masked self-attention" and head == "0"
        title = page.locator(".js-plotly-plot .gtitle").first.text_content()
        assert "".join(title.split()) == "".join(
            f"decoder masked self-attention · layer {layer} · head 0".split())  # (it may wrap)
        assert page.locator("[data-testid='stException']").count() == 0


def test_file_names_and_model_paths_are_shown_as_text_never_as_links_or_images(tmp_path):
    upload = tmp_path / "[click](https:evil.example) ![i](https:evil.example).txt"
    with served_app() as url, chromium_page() as page:
        _explore_with_upload(page, url, upload)
        choose_model(page, "other…")
        box = page.get_by_role("textbox", name="Hub id or local path")
        box.fill("[x](https://evil.example) ![i](https://evil.example/i.png)")
        box.press("Enter")
        page.get_by_text("Could not load [x](https:").wait_for(timeout=60_000)
        wait_for_run(page)
        assert page.locator("a[href*='evil'], img[src*='evil']").count() == 0
        assert not page.get_by_test_id("stException").count()


def test_a_chart_downloads_as_csv_and_png_and_the_page_as_a_zip(tmp_path):
    import zipfile

    with served_app() as url, chromium_page() as page:
        page.goto(f"{url}/explore", wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)
        wait_for_run(page)
        page.get_by_role("button", name="Export").first.click()
        with page.expect_download(timeout=60_000) as download:
            page.get_by_role("button", name="CSV", exact=True).first.click()
        csv_file = tmp_path / download.value.suggested_filename
        download.value.save_as(csv_file)
        assert csv_file.name == ("own-translator_The-cat-sat-on-the-mat_encoder.self_layer-0_"
                                 "head-0.csv")
        rows = csv_file.read_text(encoding="utf-8-sig").splitlines()
        assert rows[0].split(",")[1:] == ["The", "cat", "sat", "on", "the", "mat"]
        with page.expect_download(timeout=120_000) as download:
            page.get_by_role("button", name="PNG", exact=True).first.click()
        png = tmp_path / "chart.png"
        download.value.save_as(png)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        page.keyboard.press("Escape")
        with page.expect_download(timeout=180_000) as download:
            page.get_by_role("button", name="All 2 figures of this page (ZIP)").click()
        archive = tmp_path / "figures.zip"
        download.value.save_as(archive)
        with zipfile.ZipFile(archive) as files:
            names = files.namelist()
        assert len(names) == 10 and sum(n.endswith(".html") for n in names) == 2
