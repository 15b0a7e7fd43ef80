"""In front of a class and in a newcomer's hands, measured in Chromium: every page's text in
presentation mode at a projector's sizes, the keys that step every stepper and cross lessons,
and the text box a newcomer finds at the top of the page."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from app_pages.frame.classroom import PROSE_PX, SMALL_PX
from app_pages.frame.navigation import PAGES
from tests.helpers import (
    CHROMIUM,
    ROOT,
    chromium_page,
    click_for_run,
    run_mark,
    served_app,
    settled,
    wait_for_run,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
SVG_PX = 18  # every text in a chart: ticks, titles, marks and values in cells

# Every visible text of the page's main area, with what kind of text it is and its computed
# font size: an SVG text element (a chart), a formula, a caption, a widget's label or value,
# a table cell, a link, a button, a heading, prose (paragraphs and list items), or other.
TEXTS_JS = """
() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return [];
  const out = [], seen = new Set();
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  const SKIP = '[data-testid="stIconMaterial"], .modebar, .hoverlayer, style, script';
  const WIDGET = '[data-testid="stWidgetLabel"], label, [data-testid="stSlider"], '
    + '[data-testid="stMultiSelect"], [data-testid="stSelectbox"], input, textarea';
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent.trim();
    let el = node.parentElement;
    if (!text || !el || el.closest(SKIP)) continue;
    let kind;
    if (el.closest('svg')) {
      el = el.closest('text');
      if (!el) continue;
      kind = 'svg';
    } else if (el.closest('.katex')) { el = el.closest('.katex'); kind = 'math'; }
    else if (el.closest('[data-testid="stCaptionContainer"]')) kind = 'caption';
    else if (el.closest(WIDGET)) kind = 'label';
    else if (el.closest('[data-testid="stTable"], table')) kind = 'table';
    else if (el.closest('a')) kind = 'link';
    else if (el.closest('button')) kind = 'button';
    else if (el.closest('h1, h2, h3, h4, h5, h6')) kind = 'heading';
    else if (el.closest('p, li') && el.closest('[data-testid="stMarkdownContainer"]'))
      kind = 'prose';
    else kind = 'other';
    const rect = el.getBoundingClientRect(), style = getComputedStyle(el);
    if (!rect.width || !rect.height || style.visibility === 'hidden'
        || parseFloat(style.opacity) === 0 || seen.has(el)) continue;
    seen.add(el);
    out.push({kind, px: parseFloat(style.fontSize), text: text.slice(0, 30)});
  }
  return out;
}
"""
FLOORS = {"prose": PROSE_PX - 2, "svg": SVG_PX, "heading": PROSE_PX}  # the rest: SMALL_PX - 2
SCROLL_JS = "[document.scrollingElement.scrollWidth, window.innerWidth]"


def _open(page, url: str) -> None:
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("[data-testid='stMain']", timeout=120_000)
    settled(page)


def too_small(texts: list[dict]) -> list[dict]:
    """The texts under their kind's floor (prose ≥ 24 px, charts ≥ 18 px, the rest ≥ 20)."""
    return [t for t in texts if t["px"] < FLOORS.get(t["kind"], SMALL_PX - 2)]


def test_the_floors_are_the_issues():
    assert PROSE_PX - 2 >= 24 and SMALL_PX - 2 >= 20 and SVG_PX >= 18


@pytest.mark.parametrize("width, height", [(1920, 1080), (1280, 720)])
def test_every_page_in_presentation_mode_is_readable_from_the_back_of_the_room(width, height):
    SHOTS.mkdir(parents=True, exist_ok=True)
    failures = {}
    with served_app() as url, chromium_page(width, height) as page:
        for spec in PAGES:
            _open(page, f"{url}/{spec.url_path}?lang=zh&present=1")
            assert not page.query_selector("[data-testid='stException']"), spec.url_path
            texts = page.evaluate(TEXTS_JS)
            assert len(texts) > 5, spec.url_path  # the page was measured, not skipped
            small = too_small(texts)
            scroll_width, inner = page.evaluate(SCROLL_JS)
            if small or scroll_width > inner:
                failures[spec.url_path or "start"] = (scroll_width, inner, small[:8])
            page.screenshot(path=str(SHOTS / f"projector-{width}-{spec.url_path or 'start'}.png"))
    assert not failures, failures


STEPPERS = ["translate", "mask", "lesson_generation", "lesson_qkv", "lesson_hand",
            "lesson_multihead"]


def _step(page) -> int:
    return int(parse_qs(urlparse(page.url).query)["step"][0])


def _press(page, key: str) -> None:
    mark = run_mark(page)
    page.keyboard.press(key)
    wait_for_run(page, since=mark)
    settled(page)


def test_keys_pressed_on_the_page_step_every_stepper_wherever_the_focus_is():
    with served_app() as url, chromium_page(1920, 1080) as page:
        for path in STEPPERS:
            _open(page, f"{url}/{path}?lang=zh&present=1")
            assert _step(page) == 1, path  # every stepper opens at its first step
            assert "PageDown" in page.inner_text("[data-testid='stMain']"), path  # documented
            page.mouse.click(5, 400)  # the page's body: nothing has the focus
            _press(page, "ArrowRight")
            assert _step(page) == 2, path
            _press(page, "PageDown")
            assert _step(page) == 3, path
            _press(page, "PageUp")
            assert _step(page) == 2, path
            # after a click on the previous-step button the keys still drive the page
            click_for_run(page, page.locator("[class*='st-key-stepper_'] button").first.click)
            assert _step(page) == 1, path
            _press(page, " ")  # Space on the focused button presses it, once
            assert _step(page) == 2, path
            _press(page, "ArrowRight")
            assert _step(page) == 3, path
            _press(page, "ArrowLeft")
            assert _step(page) == 2, path


def test_keys_in_a_text_box_type_and_do_not_step():
    with served_app() as url, chromium_page(1920, 1080) as page:
        _open(page, f"{url}/translate?lang=en")
        box = page.get_by_label("English sentence", exact=True)
        box.click()
        asked = page.evaluate("() => window.__runs.requested")  # the runs asked for so far
        for key in ("End", "ArrowLeft", "PageDown", "ArrowRight", " "):
            box.press(key)
        box.press("x")  # typed after the keys: once the box shows it, every key was handled
        page.wait_for_function(
            "() => document.querySelector(\"input[aria-label='English sentence']\")"
            "?.value === 'The cat sat on the mat x'", timeout=60_000)
        # the keys moved the caret and typed in the box, and asked the app for no step
        assert page.evaluate("() => window.__runs.requested") == asked
        assert _step(page) == 1


def test_past_the_last_step_the_keys_cross_to_the_next_lesson_and_back():
    lessons = [page.url_path for page in PAGES if page.url_path.startswith("lesson_")]
    with served_app() as url, chromium_page(1920, 1080) as page:
        _open(page, f"{url}/lesson_hand?lang=zh&present=1")
        page.mouse.click(5, 400)
        last = int(page.locator("[class*='st-key-stepper_'] input[type='range']").first
                   .get_attribute("max"))
        for _ in range(last - 1):
            _press(page, "ArrowRight")
        assert _step(page) == last
        _press(page, "ArrowRight")
        after = lessons[lessons.index("lesson_hand") + 1]
        page.wait_for_url(re.compile(f"/{after}"), timeout=60_000)
        settled(page)
        # a lesson without a stepper: → and ← go straight to the next and previous lesson
        page.mouse.click(5, 400)
        _press(page, "ArrowLeft")
        page.wait_for_url(re.compile("/lesson_hand"), timeout=60_000)
        settled(page)
        assert _step(page) == 1
        _press(page, "ArrowLeft")  # at the first step: the previous lesson
        before = lessons[lessons.index("lesson_hand") - 1]
        page.wait_for_url(re.compile(f"/{before}"), timeout=60_000)


NEWCOMER = "The animal didn't cross the street because it was too tired."


@pytest.mark.parametrize("path, label", [("explore", "Text"), ("stats", "Text")])
def test_a_newcomer_finds_the_text_box_without_scrolling_at_1024(path, label):
    with served_app() as url, chromium_page(1024, 768) as page:
        _open(page, f"{url}/{path}?lang=en")
        box = page.get_by_label(label, exact=True).first
        top, bottom = box.evaluate("b => [b.getBoundingClientRect().top, "
                                   "b.getBoundingClientRect().bottom]")
        assert 0 <= top and bottom <= 768, (top, bottom)
        model = page.get_by_role("combobox", name="Model", exact=True).first
        assert model.evaluate("b => b.getBoundingClientRect().bottom") <= 768


def test_a_newcomers_first_sentence_gives_a_chart_one_click_later():
    with served_app() as url, chromium_page(1024, 768) as page:
        _open(page, f"{url}/explore?lang=en")
        box = page.get_by_label("Text", exact=True).first
        box.fill(NEWCOMER)
        mark = run_mark(page)
        box.press("Control+Enter")
        wait_for_run(page, since=mark)
        offer = page.get_by_role("button", name=re.compile("Read this text with minilm"))
        assert "does not know" in page.inner_text("[data-testid='stMain']")
        click_for_run(page, offer.click)
        settled(page)
        assert page.query_selector(".js-plotly-plot")
        assert page.get_by_label("Text", exact=True).first.input_value() == NEWCOMER
        page.screenshot(path=str(SHOTS / "newcomer-1024-explore.png"))


def _spans_and_share(page) -> tuple[list[str], str]:
    thumbs = page.locator("[data-testid='stSlider'] [data-testid='stSliderThumbValue']")
    share = page.locator("[data-testid='stMetricValue']")
    return thumbs.all_inner_texts(), share.first.inner_text() if share.count() else ""


def test_head_statistics_after_a_new_text_shows_what_a_fresh_browser_shows():
    """The issue's case: a sentence's spans chosen, then a paragraph typed over it. The
    sliders, the share and the chart must be the new text's, as a fresh browser shows them."""
    from playwright.sync_api import sync_playwright

    from tests.helpers import CHROMIUM_ARGS, watch_runs

    short = "The cat sat on the mat. The dog slept under the table."
    # 300 words and no sentence end: the spans' defaults are the whole text and nothing
    paragraph = " ".join(["When the cat sat on the mat the dog slept under the table and"] * 25)
    with served_app() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = watch_runs(browser.new_page(viewport={"width": 1280, "height": 900}))
            _open(page, f"{url}/stats?lang=en&model=minilm&text={short}")
            # the key span's start dragged to the right: a choice of the user's
            thumbs = page.locator("[data-testid='stSlider'] [data-testid='stSliderThumbValue']")
            default = _spans_and_share(page)
            thumb = thumbs.nth(2).locator("xpath=..")
            thumb.scroll_into_view_if_needed()
            box = thumb.bounding_box()
            mark = run_mark(page)
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.down()
            page.mouse.move(box["x"] + 150, box["y"] + box["height"] / 2, steps=10)
            page.mouse.up()
            wait_for_run(page, since=mark)
            settled(page)
            chosen = _spans_and_share(page)
            assert chosen != default
            box = page.get_by_label("Text", exact=True).first
            box.fill(paragraph)
            mark = run_mark(page)
            box.press("Control+Enter")
            wait_for_run(page, since=mark)
            settled(page)
            after = _spans_and_share(page)
            assert after != chosen
            fresh = watch_runs(browser.new_page(viewport={"width": 1280, "height": 900}))
            _open(fresh, page.url)
            assert _spans_and_share(fresh) == after
        finally:
            browser.close()
