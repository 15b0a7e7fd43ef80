"""Lesson §3.6's page: it renders from the models it names, and its numbers follow the typed
sentence (the translations are the models' own, the gradient's words are the sentence's)."""

from __future__ import annotations

import numpy as np
import pytest

from model.own.recurrent import RecurrentTranslator
from tests.helpers import app_test, figures, plotly_array

SHORT = "The cat sat on the mat"
LONG = "The big dog chased the small cat because it was angry"


@pytest.fixture(scope="module")
def gru() -> RecurrentTranslator:
    return RecurrentTranslator.from_files("own-gru", device="cpu")


def _translations(at) -> list[str]:
    return list(at.table[0].value.iloc[:, 2])


def _gradient_words(at) -> list[str]:
    """The words under the one-sentence gradient figure's ticks, nearest the end first."""
    ticks = [fig["layout"]["xaxis"].get("ticktext") or [] for fig in figures(at)]
    (words,) = [t for t in ticks if t and all(tick.split("<br>")[0].isdigit() for tick in t)]
    return [tick.split("<br>")[1] for tick in words]


@pytest.mark.apptest
def test_the_page_translates_the_typed_sentence_with_each_model(gru):
    at = app_test("lesson_rnn", rnn_text=SHORT)
    assert not at.exception, at.exception
    first = _translations(at)
    assert first[1] == " ".join(gru.translate(SHORT).target)
    assert len(figures(at)) == 6  # two alignments, forgetting, gradient, its profile, timing
    assert _gradient_words(at) == SHORT.split()[::-1]
    at.text_input(key="rnn_text").set_value(LONG).run(timeout=300)
    assert not at.exception, at.exception
    assert _gradient_words(at) == LONG.split()[::-1]
    second = _translations(at)
    assert second[1] == " ".join(gru.translate(LONG).target)
    assert second != first
    alignment = plotly_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_allclose(
        alignment[~np.isnan(alignment)],
        RecurrentTranslator.from_files("own-bahdanau", device="cpu").translate(LONG)
        .alignment.ravel(), atol=1e-6)


def test_every_models_line_is_told_apart_by_colour_dash_and_marker():
    from viz.lessons.rnn import forgetting_figure, gradient_figure

    names = ("own-rnn", "own-gru", "own-bahdanau", "own-translator")
    figures_ = (forgetting_figure(((1, 6), (7, 9)), (3, 4), {n: [1.0, 0.5] for n in names},
                                  {n: n for n in names}),
                gradient_figure([1, 0], {n: [1.0, 2.0] for n in names[::2]}, {}))
    for fig in figures_:
        styles = [(t.line.color, t.line.dash, t.marker.symbol) for t in fig.data]
        for part in range(3):
            assert len({style[part] for style in styles}) == len(styles), styles
