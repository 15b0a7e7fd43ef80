"""The smaller defects of issue 22 that a page shows under AppTest, each kept fixed: Explore's
caption names a positional scheme once, in either language. (The history and the link panel's
copy button are driven in Chromium: tests/browser/test_back.py.)"""

from __future__ import annotations

import re

import pytest

import i18n
from tests.helpers import app_test, shown


def _explore(lang: str, **state):
    """Explore under AppTest in ``lang`` (AppTest formats the widgets' options in the test's
    own thread: it speaks the language too)."""
    with i18n.use(lang):
        at = app_test("explore", lang=lang, **state)
    assert not at.exception, at.exception
    return at


def _about(at) -> str:
    """Explore's caption that describes the model (model · family · layers × heads · ...)."""
    found = [shown(c.value) for c in at.caption if " · " in c.value
             and ("layers ×" in c.value or "层 ×" in c.value)]
    assert len(found) == 1, [c.value for c in at.caption]
    return found[0]


def _names(about: str, phrase: str) -> bool:
    """Whether the caption has ``phrase`` as one of its parts (between two dots)."""
    return re.search(rf"·\s*{re.escape(phrase)}\s*·", about) is not None


@pytest.mark.parametrize("lang, phrase, word", [
    ("en", "sinusoidal positions", "positions"),
    ("zh", "正弦位置编码", "位置编码"),
])
def test_explores_caption_names_the_scheme_once(lang, phrase, word):
    at = _explore(lang, model_choice="own-translator")
    about = _about(at)
    assert _names(about, phrase), about
    assert about.count(word) == 1, about  # was "正弦位置编码 位置编码"


@pytest.mark.parametrize("architecture, phrases", [
    ("llama", ("RoPE positions", "旋转位置编码（RoPE）")),
    ("bert", ("learned positions", "可学习的位置嵌入")),
    ("t5", ("relative position bias", "相对位置偏置")),
])
def test_every_scheme_is_one_phrase_in_both_languages(tiny_checkpoints, architecture, phrases):
    for lang, phrase in zip(("en", "zh"), phrases):
        at = _explore(lang, model_choice="other…",
                      model_other=str(tiny_checkpoints[architecture]))
        about = _about(at)
        assert _names(about, phrase), about
        assert about.count("position") + about.count("位置") == 1, about



# --- 3.7: the models load before anyone waits, and a wait is shown ------------------------------

def test_the_server_preloads_the_lessons_models_unless_told_not_to():
    from app_pages.cache.preload import PRELOAD, TEXTS, preload_specs
    from app_pages.frame.settings import DEFAULT_TEXT

    assert preload_specs({}) == PRELOAD == ("own-translator", "minilm", "smollm2")
    assert TEXTS == (DEFAULT_TEXT,)  # the sentence a page opens with is traced already
    for off in ("off", "0", "", " no "):
        assert preload_specs({"ATTENTION_EXPLORER_PRELOAD": off}) == ()
    assert preload_specs({"ATTENTION_EXPLORER_PRELOAD": " minilm, own-random ,minilm,"}) == (
        "minilm", "own-random")


@pytest.mark.slow
def test_lesson_families_names_each_model_while_it_loads(monkeypatch):
    from app_pages.cache import getters

    monkeypatch.setattr(getters, "_LOADED", set())  # a server that has loaded none of them
    at = app_test("lesson_families", fam_loaded=["minilm", "smollm2"])
    assert not at.exception, at.exception
    (status,) = at.status
    assert status.state == "complete"
    lines = [shown(m.value) for m in status.markdown]
    names = [line.split(" loaded in ")[0] for line in lines]  # in the columns' order (the
    # translator too, unless the Start page, run before the switch, loaded it)
    assert names in (["minilm", "smollm2"], ["minilm", "smollm2", "own-translator"]), lines
    assert all(re.fullmatch(r"\S+ loaded in \d+\.\d s\.", line) for line in lines), lines
    assert re.fullmatch(rf"Loaded {', '.join(names)} in \d+\.\d s\.", status.label), status.label
    assert len(at.get("plotly_chart")) == 3
    at.run()  # nothing left to load: no box
    assert not at.status and len(at.get("plotly_chart")) == 3


@pytest.mark.slow
def test_models_the_server_preloaded_show_without_a_click(monkeypatch):
    from app_pages.cache import getters
    from app_pages.cache.preload import PRELOAD, preload
    from app_pages.frame.settings import DEFAULT_TEXT

    monkeypatch.setattr(getters, "_LOADED", set())
    took = preload(PRELOAD, "cpu")
    assert set(took) == set(PRELOAD)
    for spec in PRELOAD:  # and the default sentence traced by each
        assert getters.shared_cache().peek(getters.trace_key(spec, "cpu", DEFAULT_TEXT))[0]
    at = app_test("lesson_families")
    assert not at.exception, at.exception
    assert not [b.key for b in at.button if b.key and b.key.startswith("fam_load")]
    assert not at.status  # nothing to wait for
    assert len(at.get("plotly_chart")) == 3
