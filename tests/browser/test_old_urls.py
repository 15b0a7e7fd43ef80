"""In Chromium: every page's URL as links named it before the pages' scripts moved still opens
that page (the list is the contract, in tests/app/test_links.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.app.test_links import OLD_URLS
from tests.helpers import CHROMIUM, chromium_page, served_app, wait_for_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
# The navigation's link to the page shown: its title (after the icon).
CURRENT_JS = """() => document.querySelector(
  '[data-testid="stSidebarNav"] a[aria-current="page"]')?.innerText.trim().split('\\n').pop()"""


def test_every_old_url_opens_its_own_page():
    opened = {}
    with served_app() as url, chromium_page(1280, 900) as page:
        for path in OLD_URLS:
            page.goto(f"{url}/{path}")
            wait_for_run(page)
            assert urlsplit(page.url).path == f"/{path}", (path, page.url)  # not sent elsewhere
            assert not page.query_selector("[data-testid='stException']"), path
            assert "does not exist" not in page.inner_text("[data-testid='stMain']"), path
            opened[path] = page.evaluate(CURRENT_JS)
    assert opened == OLD_URLS
