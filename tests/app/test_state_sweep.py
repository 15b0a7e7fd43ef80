"""State that can never contradict what is shown: on every page, choose values, then change the
text and the model; the page must show what a fresh session shows with the same visible
choices. And the case that found it: Head statistics after a short sentence is replaced by a
paragraph."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1.element_tree import InitialValue

from app_pages.frame.navigation import PAGES
from app_pages.frame.settings import SHARED_KEYS
from tests.helpers import app_test, figures

pytestmark = pytest.mark.slow

FIRST, SECOND = "The cat sat on the mat", "The dog chased the mouse because it was hungry"
VALUE_WIDGETS = ("selectbox", "slider", "select_slider", "radio", "multiselect", "number_input",
                 "text_input", "text_area", "checkbox", "toggle")
# Widgets left as they are: the sidebar's settings, and choices that open another page.
LEFT = set(SHARED_KEYS) | {"example"}


def visible_choices(at) -> dict:
    """Every keyed widget's value as the page shows it."""
    choices = {}
    for kind in VALUE_WIDGETS:
        for widget in getattr(at, kind):
            if widget.key and not widget.key.startswith("$$"):
                value = widget.value
                choices[widget.key] = tuple(value) if isinstance(value, list) else value
    return choices


def shown(at) -> dict:
    """What the page shows: its texts, numbers and charts."""
    def texts(kind):
        return [element.value for element in getattr(at, kind)]

    return {"markdown": texts("markdown"), "caption": texts("caption"), "info": texts("info"),
            "warning": texts("warning"), "error": texts("error"), "title": texts("title"),
            "metric": [(m.label, m.value) for m in at.metric],
            "charts": [json.dumps(f, sort_keys=True) for f in figures(at)]}


def choose_other_values(at) -> None:
    """Move the page's selectors and sliders off their defaults (the last option, the far
    end), one run each, each found again in the run before (its options may have changed)."""
    for kind in ("selectbox", "slider"):
        for key in [w.key for w in getattr(at, kind) if w.key and w.key not in LEFT]:
            found = [w for w in getattr(at, kind) if w.key == key]
            if not found:  # the run before took it away
                continue
            widget = found[0]
            if kind == "selectbox":
                if len(widget.options) < 2:
                    continue
                try:
                    widget.select_index(len(widget.options) - 1).run()
                except ValueError:  # AppTest cannot name an option shown otherwise than it is
                    widget._value = InitialValue()  # (Translate's "head 3" for head 3)
                    at.session_state[key] = len(widget.options) - 2  # [average, *heads]
                    at.run()
            else:
                top, value = widget.proto.max, widget.value
                widget.set_value(tuple(top for _ in value) if isinstance(value, tuple)
                                 else top).run()
            if at.exception:
                return


def change_text_and_model(at, spec) -> None:
    """Another text in every text box of the page, and another model (an own one where it can
    be) where the page has a model choice."""
    for kind in ("text_area", "text_input"):
        for box in getattr(at, kind):
            if box.key in ("text", "translate_text") or box.key.endswith("_text"):
                box.set_value(SECOND if box.value != SECOND else FIRST)
    for radio in at.radio:
        if radio.key and radio.key.endswith("_model"):
            others = [m for m in radio.options if m != radio.value]
            own = [m for m in others if m.startswith("own-")]
            radio.set_value((own or others)[0])
    if spec.reads_text:
        at.selectbox(key="model_choice").set_value("own-random")
    at.run()


@pytest.mark.parametrize("spec", [p for p in PAGES if p.url_path not in ("corpus",)],
                         ids=lambda p: p.url_path or "start")
def test_a_page_after_its_text_and_model_change_shows_what_a_fresh_session_shows(spec):
    at = app_test(spec.url_path, text=FIRST)
    assert not at.exception, at.exception
    choose_other_values(at)
    assert not at.exception, at.exception
    change_text_and_model(at, spec)
    assert not at.exception, at.exception
    choices = visible_choices(at)
    fresh = app_test(spec.url_path, **choices)
    assert not fresh.exception, fresh.exception
    assert visible_choices(fresh) == choices
    assert shown(at) == shown(fresh)


def test_head_statistics_spans_follow_a_new_text_and_never_show_the_old_ones():
    short = "The cat sat on the mat. The dog slept under the table."
    paragraph = " ".join(["When the cat sat on the mat the dog slept under the table."] * 25)
    at = app_test("stats", text=short, model_choice="minilm")
    at.select_slider(key="span_k").set_value((1, 5)).run()
    at.select_slider(key="span_q").set_value((7, 9)).run()
    before = at.metric[0].value
    at.text_area(key="text").set_value(paragraph).run()
    assert not at.exception
    spans = at.session_state["span_q"], at.session_state["span_k"]
    fresh = app_test("stats", text=paragraph, model_choice="minilm")
    # the spans went back to the new text's sentences: the same as a fresh session's
    assert (fresh.session_state["span_q"], fresh.session_state["span_k"]) == spans
    assert at.metric[0].value == fresh.metric[0].value != before
    assert shown(at)["charts"] == shown(fresh)["charts"]
