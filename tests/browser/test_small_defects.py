"""The smaller defects of issue 22 in headless Chromium, each kept fixed: each page visited is one
entry of the browser's history, whatever the app does to the URL's parameters after it ("See it"
took two presses of Back); the link panel's copy button covers no character of the link; 3.2's
√d_model is named where no bar covers it, in both languages and in presentation mode; and a
served app loads lesson 3.7's models as it starts."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.helpers import (
    CHROMIUM,
    bring_into_view,
    choose,
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


@pytest.fixture(scope="module")
def url():
    with served_app() as served:
        yield served


def _overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def _path(page) -> str:
    return urlsplit(page.url).path


def _params(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


def _length(page) -> int:
    return page.evaluate("() => window.history.length")


def _back(page, path: str) -> None:
    """Press Back once and wait until the page at ``path`` has run."""
    mark = page.evaluate("() => window.__runs.seq")
    page.go_back(wait_until="commit")
    page.wait_for_function("path => window.location.pathname === path", arg=path,
                           timeout=30_000)
    wait_for_run(page, since=mark)


def test_see_it_a_page_link_and_the_sidebar_each_cost_one_back(url):
    with chromium_page() as page:
        page.goto(f"{url}/lesson_see_it")
        wait_for_run(page)
        page.get_by_role("heading", name="sat → cat").wait_for(timeout=120_000)
        before = _length(page)

        # "See it": a button whose callback sets the view, then st.switch_page (Streamlit clears
        # the parameters, switches, and Explore writes its own: three changes of the URL)
        see_it = page.get_by_role("button", name="See it").first
        click_for_run(page, see_it.click)
        page.wait_for_function("() => window.location.pathname.endsWith('/explore')",
                               timeout=120_000)
        wait_for_run(page)
        assert _path(page) == "/explore"
        assert {"kind", "layer", "head"} <= set(_params(page))  # the view's link, in the bar
        assert _length(page) == before + 1

        # a widget changed on the page rewrites the link and adds no entry
        layer = _params(page)["layer"]
        choose(page, "Layer", "0" if layer != "0" else "1")
        page.wait_for_function("layer => new URLSearchParams(location.search).get('layer') "
                               "!== layer", arg=layer, timeout=60_000)
        wait_for_run(page)
        assert _length(page) == before + 1

        # the sidebar's navigation: one entry more
        nav = page.locator("[data-testid='stSidebarNav'] a", has_text="Model view")
        click_for_run(page, nav.click)
        page.wait_for_function("() => window.location.pathname.endsWith('/model_view')",
                               timeout=120_000)
        wait_for_run(page)
        assert _length(page) == before + 2

        _back(page, "/explore")
        page.get_by_role("heading", name="Explore attention").wait_for(timeout=60_000)
        _back(page, "/lesson_see_it")
        page.get_by_role("heading", name="sat → cat").wait_for(timeout=60_000)
        assert page.locator("[data-testid='stException']").count() == 0
        # the lesson's entry kept its link: Back reopened the lesson, not a bare address
        assert _params(page).get("lang") == "en"


@pytest.mark.parametrize("width", [1280, 1024])
def test_the_link_panels_copy_button_covers_no_character_of_the_link(url, width):
    with chromium_page(width, 800) as page:
        page.goto(f"{url}/explore?lang=zh")
        wait_for_run(page)
        page.locator("[data-testid='stSidebar'] [data-testid='stExpander'] summary").first.click()
        code = page.locator("[data-testid='stSidebar'] [data-testid='stCode']").first
        bring_into_view(code)
        code.hover()  # the copy button shows on hover
        button = code.get_by_role("button").first
        button.wait_for(state="visible", timeout=30_000)
        found = code.evaluate("""code => {
            const b = code.querySelector('button').getBoundingClientRect();
            const text = code.querySelector('code');
            const walker = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
            const covered = [], range = document.createRange();
            let shown = '';
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              for (let i = 0; i < node.length; i++) {
                range.setStart(node, i); range.setEnd(node, i + 1);
                shown += node.data[i];
                for (const r of range.getClientRects()) {
                  if (r.width && r.left < b.right && r.right > b.left
                      && r.top < b.bottom && r.bottom > b.top) covered.push(node.data[i]);
                }
              }
            }
            return {covered, shown, button: [b.width, b.height]};
        }""")
        assert found["button"][0] > 0 and found["button"][1] > 0
        assert found["shown"].startswith(url), found["shown"]  # the whole link, port included
        assert found["covered"] == [], found


@pytest.mark.parametrize("lang, present", [("en", 0), ("zh", 0), ("en", 1), ("zh", 1)])
def test_the_root_d_model_label_is_clear_of_every_bar(url, lang, present):
    with chromium_page(1920 if present else 1280, 1000) as page:
        page.goto(f"{url}/lesson_architecture?lang={lang}&present={present}")
        settled(page)
        sizes = page.locator(".js-plotly-plot").filter(has=page.locator(".bars")).first
        bring_into_view(sizes)
        settled(page)
        label = sizes.locator(".legendtext", has_text="√d_model")
        assert label.count() == 1
        box = label.bounding_box()
        assert box["width"] > 0 and box["height"] > 0
        frame = sizes.bounding_box()
        assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
        bars = [b for b in (p.bounding_box() for p in sizes.locator(".bars path").all()) if b]
        assert len(bars) >= 8  # four sizes around each of two sublayers at least
        assert not [b for b in bars if _overlap(box, b)]
        # nothing else names the line on the plot, where the bars are
        assert sizes.locator(".annotation-text", has_text="d_model").count() == 0


def test_a_served_app_loads_the_families_models_as_it_starts(monkeypatch):
    """The server loads the lesson's models before anyone asks: lesson 3.7 then shows all
    three families without a click (opened before the loads are over, it is opened again,
    each time once its run is over, until then; nothing on the page asks for a model)."""
    monkeypatch.setenv("ATTENTION_EXPLORER_PRELOAD", "own-translator,minilm,smollm2")
    with served_app() as served, chromium_page() as page:
        deadline = time.monotonic() + 300
        while True:
            page.goto(f"{served}/lesson_families")
            wait_for_run(page)
            if not page.get_by_role("button", name="Load all three models").count():
                break
            assert time.monotonic() < deadline, "the models were not loaded in 300 s"
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 3",
                               timeout=120_000)
        assert page.locator("[data-testid='stException']").count() == 0
