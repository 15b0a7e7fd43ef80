"""The lessons walked in Chromium as a class would: from the first lesson to the last with the
"next" link, in English and in Chinese, no exception and no overlapping tick labels on the
way, a screenshot of each (in ``screenshots/`` or ``$SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import i18n
from app_pages.frame.navigation import LESSON_PAGES
from tests.browser.test_screenshots import OVERLAPS_JS
from tests.helpers import CHROMIUM, ROOT, chromium_page, served_app, wait_for_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lessons_walked_with_next_from_first_to_last(lang):
    SHOTS.mkdir(parents=True, exist_ok=True)
    with i18n.use(lang):
        titles = [i18n._(page.title) for page in LESSON_PAGES]
        next_word = i18n._("Next: {title}").split("{")[0]
    first = LESSON_PAGES[0].url_path
    seen = []
    with served_app() as url, chromium_page(1920, 1080) as page:
        page.goto(f"{url}/{first}?lang={lang}", wait_until="networkidle")
        wait_for_run(page)
        for number, title in enumerate(titles, start=1):
            main = page.locator("[data-testid='stMain']")
            assert page.locator("h1").first.inner_text().strip() == title, (number, title)
            assert not page.query_selector("[data-testid='stException']"), title
            assert not main.locator("[data-testid='stAlert'] >> text=/Traceback/").count()
            overlaps = page.evaluate(OVERLAPS_JS)
            assert not overlaps, (title, overlaps[:5])
            page.screenshot(path=str(SHOTS / f"lesson-{lang}-{number:02d}.png"), full_page=True)
            seen.append(title)
            onward = main.get_by_role("link").filter(has_text=next_word)
            if number == len(titles):
                assert not onward.count()  # the last lesson has no next
                break
            onward.first.click()
            wait_for_run(page)
    assert seen == titles
