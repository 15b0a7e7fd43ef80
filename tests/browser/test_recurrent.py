"""The recurrent translators in Chromium at 1920×1080, in 中文 and presentation mode (issue 25):
Bahdanau's alignment in Explore, the recurrent decoder writing in Translate, the single vector
beside attention in Compare; drawn, labels apart, and a screenshot of each (``screenshots/`` or
``$SCREENSHOT_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.browser.test_screenshots import OVERLAPS_JS
from tests.helpers import CHROMIUM, ROOT, SEED_SENTENCE, chromium_page, served_app, settled

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
TEXT = quote(SEED_SENTENCE)
# (screenshot, address after the server's, what the page must say)
VIEWS = [
    ("recurrent-explore-bahdanau", f"explore?model=own-bahdanau&text={TEXT}",
     "在循环解码器的每一步记录下来"),
    ("recurrent-explore-gru", f"explore?model=own-gru&text={TEXT}", "own-gru 没有注意力"),
    ("recurrent-translate-bahdanau",
     f"translate?model=own-bahdanau&sentence={TEXT}&step=4", "解码器没有自注意力"),
    ("recurrent-compare", f"compare?model=own-gru&mode=models&second=own-bahdanau&sentence={TEXT}",
     "own-gru 没有注意力"),
    ("recurrent-mask-gru", f"mask?model=own-gru&text={TEXT}", "它不需要因果掩码"),
]


def test_the_recurrent_translators_read_from_the_back_of_a_room():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_app() as url, chromium_page(1920, 1080) as page:
        for name, address, says in VIEWS:
            page.goto(f"{url}/{address}&lang=zh&present=1", wait_until="domcontentloaded")
            settled(page)
            assert page.locator("[data-testid='stException']").count() == 0, name
            page.get_by_text(says).first.wait_for(timeout=60_000)
            if "mask" not in name:
                assert page.locator(".js-plotly-plot").count() >= 1, name
            overlaps = page.evaluate(OVERLAPS_JS)
            assert not overlaps, f"{name}: overlapping labels {overlaps[:5]}"
            page.screenshot(path=str(SHOTS / f"{name}.png"))
            if "translate" in name or "explore" in name:
                page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"{name}-chart.png"))
