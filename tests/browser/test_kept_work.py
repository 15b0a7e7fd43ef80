"""In Chromium: what a user typed on Compare and ran on Corpus is still there after another page
and after a reload (the link carries it; the results are found again in the shared cache)."""

from __future__ import annotations

import pytest

from tests.helpers import chromium_page, click_for_run, run_mark, served_app, wait_for_run

pytestmark = pytest.mark.slow

PAIR_A = "the dog sat on the mat because it was tired"
PASTED = "the cat sat on the mat\nthe dog sat on the sofa\nthe bird sat on the box"


def _go(page, title: str) -> None:
    """Open another page from the sidebar's navigation."""
    click_for_run(page, page.get_by_test_id("stSidebarNav").get_by_role(
        "link", name=title).first.click)


def _submit(page, box, keys: str) -> None:
    """Press ``keys`` in ``box`` (Enter, Control+Enter: the text is sent) and wait for the run."""
    mark = run_mark(page)
    box.press(keys)
    wait_for_run(page, since=mark)


def _main(page) -> str:
    return page.inner_text("[data-testid='stMain']")


def test_compare_and_corpus_keep_their_work_over_navigation_and_a_reload():
    with served_app() as url, chromium_page(1280, 900) as page:
        page.goto(f"{url}/compare")
        wait_for_run(page)
        box = page.get_by_label("Sentence A", exact=True)
        box.fill(PAIR_A)
        _submit(page, box, "Enter")
        page.wait_for_function("() => location.search.includes('a=the+dog')", timeout=60_000)

        _go(page, "Explore")
        _go(page, "Compare")
        assert page.get_by_label("Sentence A", exact=True).input_value() == PAIR_A
        page.reload()
        wait_for_run(page)
        assert page.get_by_label("Sentence A", exact=True).input_value() == PAIR_A

        _go(page, "Corpus")
        pasted = page.get_by_label("…or paste sentences, one per line", exact=True)
        pasted.fill(PASTED)
        _submit(page, pasted, "Control+Enter")
        page.get_by_role("button", name="Run 3 sentences").click()
        page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=240_000)
        wait_for_run(page)
        assert "3 of 3 sentences ran" in _main(page)

        _go(page, "Explore")
        _go(page, "Corpus")
        page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=120_000)
        assert "3 of 3 sentences ran" in _main(page)  # without a second click
        page.reload()
        wait_for_run(page)
        page.locator(".js-plotly-plot .heatmaplayer").first.wait_for(timeout=120_000)
        assert "3 of 3 sentences ran" in _main(page)
        assert page.get_by_label("…or paste sentences, one per line",
                                 exact=True).input_value() == PASTED
        assert not page.query_selector("[data-testid='stException']")
