"""The recurrent translators on every page (issue 25): Explore, Translate and Compare show their
one attention like any model's; the pages that read self-attention say that these models have
none and where to look; in Chinese with no English left."""

from __future__ import annotations

import re

import numpy as np
import pytest

import i18n
from app_pages.frame.navigation import PAGES
from model import load
from tests.app.test_i18n import LATIN_OK, english_words, raw_kinds, visible_strings
from tests.helpers import SEED_SENTENCE, app_test, figures, messages, plotly_array

RECURRENT = ("own-bahdanau", "own-gru")
# the pages that read self-attention: they stop with a note for a model that has none
READ_SELF = ("mask", "rollout", "shapes")
VIEWS = [page.url_path for page in PAGES if not page.url_path.startswith("lesson_")]
LESSONS = [page.url_path for page in PAGES if page.url_path.startswith("lesson_")]
NO_SELF = "has none: a recurrent translator reads one word per step"


@pytest.fixture(scope="module")
def traces() -> dict:
    return {spec: load(spec, device="cpu").trace(SEED_SENTENCE) for spec in RECURRENT}


def _run(page: str, spec: str, **state):
    at = app_test(page, model_choice=spec, text=SEED_SENTENCE, **state)
    assert not at.exception, at.exception
    assert not at.error, messages(at.error)
    return at


def _check(page: str, spec: str) -> None:
    at = _run(page, spec)
    if page in READ_SELF:
        assert NO_SELF in messages(at.info) and not at.get("plotly_chart"), page
    elif page == "what_moves":  # it takes values and W_O apart: these models have neither
        assert "recurrent translator" in messages(at.warning) or \
            "has no attention to take apart" in messages(at.warning)
    elif page.startswith("lesson_"):  # the lessons run their own models: as many charts
        assert len(at.get("plotly_chart")) == len(_run(page, "own-translator").get(
            "plotly_chart")), page
    elif page != "corpus":  # (the corpus waits for sentences)
        assert at.get("plotly_chart"), page


@pytest.mark.parametrize("page", VIEWS, ids=lambda page: page or "start")
def test_every_view_runs_with_bahdanaus_model(page):
    _check(page, "own-bahdanau")


@pytest.mark.slow
@pytest.mark.parametrize("spec", ("own-gru", "own-rnn"))
@pytest.mark.parametrize("page", VIEWS, ids=lambda page: page or "start")
def test_every_view_runs_with_a_single_vector_model(page, spec):
    _check(page, spec)


@pytest.mark.slow
@pytest.mark.parametrize("spec", RECURRENT)
@pytest.mark.parametrize("page", LESSONS)
def test_every_lesson_runs_with_a_recurrent_model_in_the_sidebar(page, spec):
    _check(page, spec)


def test_explore_draws_bahdanaus_weights_and_says_how_they_were_caught(traces):
    at = _run("explore", "own-bahdanau")
    assert at.selectbox(key="kind").options == ["decoder cross-attention (target → source)"]
    z = plotly_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_allclose(z, traces["own-bahdanau"].weights("decoder.cross", 0, 0),
                               atol=1e-6)
    assert "Bahdanau's additive attention, recorded at each step" in messages(at.caption)


def test_explore_draws_the_single_vector_as_what_it_reads_and_says_so(traces):
    at = _run("explore", "own-gru")
    z = plotly_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_array_equal(z, traces["own-gru"].weights("decoder.cross", 0, 0))
    assert (z[:, -1] == 1).all()
    assert "own-gru has no attention" in messages(at.info)


def test_a_kind_layer_and_head_the_model_lacks_fall_back_to_what_it_has(traces):
    # a link or an earlier model left the encoder's self-attention, layer 5, head 7
    at = _run("explore", "own-bahdanau", kind="encoder.self", layer=5, head=7)
    assert (at.selectbox(key="kind").value, at.selectbox(key="layer").value,
            at.selectbox(key="head").value) == ("decoder.cross", 0, 0)
    at.selectbox(key="model_choice").set_value("own-translator").run()
    assert not at.exception and at.selectbox(key="layer").value == 0


def test_translate_writes_with_bahdanaus_model_and_shows_its_alignment(traces):
    at = app_test("translate", model_choice="own-bahdanau")
    assert not at.exception, at.exception
    assert "a recurrent decoder writing one word per step" in messages(at.caption)
    assert "decoder has no self-attention" in messages(at.info)
    trace = traces["own-bahdanau"]
    at.slider(key="step").set_value(4).run()
    titles = {re.sub("<[^>]+>", " ", f["layout"]["title"]["text"]): f for f in figures(at)}
    assert len(titles) == 3 and not any("self-attention" in title for title in titles)
    alignment = next(f for t, f in titles.items() if t.startswith("Alignment"))
    np.testing.assert_allclose(plotly_array(alignment["data"][0]["z"]),
                               trace.weights("decoder.cross", 0, 0)[:4], atol=1e-6)
    assert "垫子" in messages(at.markdown)  # step 4 writes 垫子
    bars = next(f for t, f in titles.items() if "of step 4 over the source" in t)
    assert bars["layout"]["yaxis"]["ticktext"] == list(trace.source_tokens)
    order = np.asarray(bars["data"][0]["y"])  # each bar's source position
    np.testing.assert_allclose(plotly_array(bars["data"][0]["x"]),
                               trace.weights("decoder.cross", 0, 0)[3][order], atol=1e-6)


def test_compare_sets_the_single_vector_beside_bahdanaus_attention(traces):
    at = app_test("compare", model_choice="own-gru", cmp_mode="models",
                  cmp_model_b="own-bahdanau", cmp_text=SEED_SENTENCE)
    assert not at.exception, at.exception
    drawn = [plotly_array(f["data"][0]["z"]) for f in figures(at)]
    assert len(drawn) == 2
    for z, spec in zip(drawn, RECURRENT[::-1]):
        np.testing.assert_allclose(z, traces[spec].weights("decoder.cross", 0, 0), atol=1e-6)
    assert "own-gru has no attention" in messages(at.info)


def test_compare_two_sentences_says_the_single_vector_has_nothing_to_rank():
    at = app_test("compare", model_choice="own-gru", cmp_mode="sentences")
    assert not at.exception, at.exception
    assert "own-gru has no attention" in messages(at.info)
    assert "No head changes" not in messages(at.success)  # nothing moves: it has no attention
    assert not at.dataframe  # and no ranking of heads
    at = app_test("compare", model_choice="own-bahdanau", cmp_mode="sentences")
    assert not at.exception and "has no attention" not in messages(at.info)


def test_the_corpus_lists_the_source_each_recurrent_model_read():
    at = app_test("corpus", model_choice="own-bahdanau",
                  cp_pasted="The cat sat on the mat\nThe dog slept under the table")
    at.button(key="cp_run").click().run()
    assert not at.exception, at.exception
    shown = " ".join(str(v) for frame in at.dataframe for v in frame.value.to_numpy().ravel())
    assert "The · cat · sat · on · the · mat" in shown and "猫" not in shown
    at = app_test("corpus", model_choice="own-gru", cp_pasted="The cat sat on the mat")
    at.button(key="cp_run").click().run()
    assert not at.exception and "own-gru has no attention" in messages(at.info)


def test_what_moves_and_positions_say_what_a_recurrent_model_lacks():
    at = _run("what_moves", "own-bahdanau")
    assert "recurrent translator: its attention averages the encoder's states" in \
        messages(at.warning)
    at = _run("positions", "own-gru")
    assert "own-gru** has no position encoding" in messages(at.markdown)


@pytest.mark.parametrize("page", ["explore", "translate", "mask", "compare", "positions",
                                  "what_moves", "shapes", "lesson_troubles"])
@pytest.mark.parametrize("spec", RECURRENT)
def test_the_recurrent_models_pages_in_chinese_leave_no_english(page, spec):
    i18n.missing().clear()
    state = dict(cmp_mode="models", cmp_model_b="own-bahdanau") if page == "compare" else {}
    with i18n.use("zh"):
        at = app_test(page, lang="zh", model_choice=spec, text=SEED_SENTENCE, **state)
    assert not at.exception, at.exception
    assert not i18n.missing(), sorted(i18n.missing())[:10]
    allowed = LATIN_OK | {w.lower() for w in re.findall(r"[A-Za-z]+", SEED_SENTENCE)}
    allowed |= {w.lower() for w in load("own-translator", device="cpu").english_words()}
    left = {text[:120]: words for text in visible_strings(at)
            if (words := english_words(text, allowed))}
    assert not left, left
    assert not raw_kinds(at), raw_kinds(at)
