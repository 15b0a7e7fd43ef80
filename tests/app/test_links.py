"""Links reopen a view: the URL's parameters hold the model, text, language, presentation mode
and the page's kind, layer, head and step; bad values give a message and a working page."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

import i18n
from app_pages.frame.links import MAX_QUERY
from app_pages.frame.navigation import script
from tests.helpers import ROOT, messages

# Every page's URL path and the page it opens (its title in the navigation, in English), as
# links shared before the pages' scripts moved name them: the contract that keeps old links
# working. tests/browser/test_old_urls.py opens each in Chromium.
OLD_URLS = {
    "": "Start here", "translate": "Translate", "explore": "Explore",
    "model_view": "Model view", "head_view": "Head view", "mask": "Causal mask",
    "rollout": "Rollout", "stats": "Head statistics", "corpus": "Corpus", "compare": "Compare",
    "positions": "Positions", "shapes": "Shapes and costs",
    "lesson_architecture": "3.2 The architecture", "lesson_positions": "3.4 Why positions",
    "lesson_see_it": "3.4 Who looks at whom",
    "lesson_generation": "3.4 Generation and the KV cache",
    "lesson_families": "3.7 Three families", "lesson_qkv": "4.2 Query, key, value",
    "lesson_hand": "4.3 By hand", "lesson_scaling": "4.4 Why divide by √dₖ",
    "lesson_multihead": "4.6 Multi-head", "lesson_complexity": "4.8 Complexity",
}


def opened(page: str | None, **params):
    """The app opened fresh from a link to ``page`` with ``params`` (on the CPU)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["device"] = "cpu"
    at.query_params.update({k: str(v) for k, v in params.items()})
    if page is not None:
        at.switch_page(script(page))
    return at.run()


def link_of(at) -> dict[str, str]:
    """The parameters of the link the sidebar offers."""
    (code,) = at.sidebar.code
    return {k: v[0] for k, v in parse_qs(urlsplit(code.value).query).items()}


def test_a_link_reopens_the_same_head_in_the_same_language():
    with i18n.use("zh"):  # AppTest formats the options in the test's thread too
        at = opened("explore", model="own-translator", text="The cat sat on the mat",
                    lang="zh", kind="decoder.cross", layer=1, head=2)
    assert not at.exception and not at.warning
    assert at.selectbox(key="kind").value == "decoder.cross"
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (1, 2)
    assert at.title[0].value == "探索注意力"
    assert at.text_area(key="text").value == "The cat sat on the mat"
    # the address bar and the offered link say the same view
    link = link_of(at)
    assert dict(at.query_params) == {k: [v] for k, v in link.items()} or \
        {k: str(v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()} == link
    assert link["layer"] == "1" and link["head"] == "2" and link["lang"] == "zh"
    assert urlsplit(at.sidebar.code[0].value).path.endswith("/explore")


def test_changing_a_widget_changes_the_link():
    at = opened("explore", model="own-translator")
    at.selectbox(key="head").set_value(3).run()
    assert link_of(at)["head"] == "3"
    at.sidebar.radio(key="lang").set_value("zh").run()  # (the options shown were English)
    assert link_of(at)["lang"] == "zh" and at.title[0].value == "探索注意力"


def test_presentation_mode_and_step_travel_in_the_link():
    at = opened("mask", model="own-translator", present=1, step=2)
    assert not at.exception
    assert at.sidebar.toggle(key="present").value is True
    assert link_of(at)["present"] == "1" and link_of(at)["step"] == "2"


@pytest.mark.parametrize("params, said", [
    ({"lang": "klingon"}, ["klingon"]),
    ({"model": "no/such-model-anywhere", "lang": "en"}, ["no/such-model-anywhere"]),
    ({"device": "tpu"}, ["tpu"]),
    ({"layer": "99", "head": "-4"}, ["99", "-4"]),
    ({"layer": "seven"}, ["seven"]),
    ({"kind": "decoder.crosss"}, ["decoder.crosss"]),
    ({"palette": "neon", "present": "banana"}, ["neon", "banana"]),
    ({"layer": "[x](https://e.co)"}, ["[x](https://e.co)"]),
    ({"head": "![i](https://e.co)"}, ["![i](https://e.co)"]),
])
def test_bad_values_in_a_link_are_said_and_the_page_works(params, said, monkeypatch):
    # a server that offers only its bundled models: an unknown one is refused, not loaded
    monkeypatch.setenv("ATTENTION_EXPLORER_OTHER_MODELS", "off")
    from app_pages.cache.getters import policy
    policy.clear()
    try:
        at = opened("explore", **params)
    finally:
        policy.clear()
    assert not at.exception
    shown = messages(at.warning)
    assert all(value in shown for value in said), shown
    assert "](" not in "".join(w.value for w in at.warning)  # link text stays text
    assert at.get("plotly_chart")  # the page still draws its head


def test_empty_and_repeated_values_in_a_link_are_harmless():
    at = opened("explore", model="own-translator", layer="", lang="", head="1")
    assert not at.exception and not at.warning
    assert at.selectbox(key="head").value == 1


def test_a_link_to_an_unknown_page_is_named():
    from app_pages.frame.links import unknown_page

    assert unknown_page("http://host:8501/no_such_page?lang=zh") == "no_such_page"
    assert unknown_page("http://host:8501/%E6%8E%A2%E7%B4%A2") == "探索"
    for known in ("http://host:8501/", "http://host:8501/explore?x=1", ""):
        assert unknown_page(known) == ""
    assert unknown_page("http://host/app/mask", base="/app") == ""
    assert unknown_page("http://host/app", base="app") == ""
    assert unknown_page("http://host/app/nope", base="app") == "nope"


def test_a_text_too_long_for_a_link_is_said_not_broken():
    text = "The cat sat on the mat . " * (MAX_QUERY // 10)
    at = opened("explore", model="own-random")
    at.text_area(key="text").set_value(text).run()
    link = link_of(at)
    assert "text" not in link and link["model"] == "own-random"
    assert "too long for a link" in messages(at.sidebar.info)


def test_a_page_that_stops_early_still_offers_its_link():
    at = opened("explore", model="own-translator", text="The zebra sat")
    assert at.error  # the translator does not know "zebra"
    assert link_of(at)["text"] == "The zebra sat"


def test_a_link_value_a_widget_does_not_offer_is_said_as_plain_text():
    # Translate's head is a number or "average": any other word reaches the widget's fallback
    at = opened("translate", head="[x](https://e.co)")
    assert not at.exception
    assert "[x](https://e.co)" in messages(at.warning)
    assert "](" not in "".join(w.value for w in at.warning)
    assert at.selectbox(key="dec_head").value == "average"


def test_a_translate_link_shows_its_own_sentence_and_cuts_a_long_one():
    at = opened("translate", sentence="The dog sat on the mat")
    assert at.text_input(key="translate_text").value == "The dog sat on the mat"
    assert at.selectbox(key="example").value == "(your own sentence)"
    long = opened("translate", sentence="The cat sat on the mat " * 30)
    assert not long.exception
    # cut at the last word's end within 300 characters: 13 times the sentence, 298 characters
    assert long.text_input(key="translate_text").value == " ".join(
        ["The cat sat on the mat"] * 13)
    assert messages(long.warning) == ("The sentence was cut to at most 300 characters: the "
                                      "translator reads at most 64 tokens.")
    # 78 words are still over the translator's 64 tokens: said in one line
    assert messages(long.error) == "sequence of 78 tokens is longer than max_len=64"


def test_every_url_path_shared_before_the_move_names_the_same_page_in_the_same_order():
    from app_pages.frame.navigation import PAGES

    # pages added since (the lessons of issue 25) go between them; none is renamed or moved
    shared = [page.url_path for page in PAGES if page.url_path in OLD_URLS]
    assert shared == list(OLD_URLS)
    titles = {page.url_path: page.title for page in PAGES}
    assert {path: titles[path] for path in OLD_URLS} == OLD_URLS
    assert all((ROOT / page.path).is_file() for page in PAGES)
