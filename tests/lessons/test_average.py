"""Lesson §4.1, a weighted average: the weights are torch's softmax of the scores, the mix is
their weighted sum of the information, the page follows edited scores, and the translator's head
found for it → cat has its largest weight of the row at "cat" (checked here from the whole
encoder stack, without the lesson's search)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.lessons.average import (
    INFO,
    IT_CAT,
    SCORES,
    WORDS,
    checked_inputs,
    find_head,
    model_row,
    weighted_average,
)
from tests.helpers import app_test, figures, plotly_array
from viz.lessons.average import mix_plane, scores_and_weights


@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


@pytest.fixture(scope="module")
def it_trace(translator):
    return translator.trace(IT_CAT.sentence)


@pytest.mark.parametrize("scores", [SCORES, (0.0,) * 8, (50.0, -50.0, 3.0, 0.0, 1.0, 2.0, -1.0,
                                                          99.0)])
def test_the_weights_are_torchs_softmax_of_the_scores_and_the_mix_their_weighted_sum(scores):
    mix = weighted_average(scores, INFO)
    expected = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=0)
    np.testing.assert_allclose(mix.weights, expected.numpy(), rtol=1e-12, atol=1e-15)
    assert mix.weights.sum() == pytest.approx(1.0, abs=1e-12)
    reference = expected @ torch.tensor(INFO, dtype=torch.float64)  # Σ wᵢ·infoᵢ
    np.testing.assert_allclose(mix.output, reference.numpy(), rtol=1e-12, atol=1e-12)


def test_the_lessons_defaults_put_cat_high_and_chases_low():
    mix = weighted_average(SCORES, INFO)
    cat, chases = WORDS.index("cat"), WORDS.index("chases")
    assert mix.largest == cat
    assert mix.weights[chases] < mix.weights[cat] / 10
    assert mix.weights[chases] == min(mix.weights[:3])  # the lowest of cat, chases, mouse


@pytest.mark.parametrize("cell, message", [(None, "empty"), ("abc", "not a number"),
                                           (1e6, "between")])
def test_a_bad_cell_is_refused_with_its_word_named(cell, message):
    scores = list(SCORES)
    scores[1] = cell
    with pytest.raises(ValueError, match=message) as error:
        checked_inputs(list(WORDS), scores, INFO)
    assert "chases" in str(error.value)


def _independent_head(trace):
    """The head, from the whole encoder stack: of the heads whose row for "it" is largest at
    "cat", the one where "cat" weighs most."""
    tokens = [t.lower() for t in trace.source_tokens]
    it, cat = tokens.index("it"), tokens.index("cat")
    rows = trace.stack("encoder.self")[:, :, it, :].astype(np.float64)  # [layer, head, key]
    best = None
    for layer in range(rows.shape[0]):
        for head in range(rows.shape[1]):
            if rows[layer, head].argmax() == cat and (
                    best is None or rows[layer, head, cat] > rows[best][cat]):
                best = (layer, head)
    return best, it, cat, rows


def test_the_head_found_has_its_largest_weight_for_it_at_cat(it_trace):
    (layer, head), it, cat, rows = _independent_head(it_trace)
    found_layer, found_head, argmax_is_key, grid = find_head(it_trace)
    assert argmax_is_key
    assert (found_layer, found_head) == (layer, head)
    assert rows[found_layer, found_head].argmax() == cat
    np.testing.assert_array_equal(grid, rows[:, :, cat])


def test_the_models_output_for_it_is_the_weighted_average_of_its_values(translator, it_trace):
    found = model_row(translator, it_trace)
    tokens = [t.lower() for t in found.tokens]
    assert tokens[found.query] == "it" and tokens[found.key] == "cat"
    assert int(np.argmax(found.weights)) == found.key
    assert found.weights.sum() == pytest.approx(1.0, abs=1e-5)
    # the recorded output (hook_z) against weights · values computed here
    np.testing.assert_allclose(found.weights @ found.values, found.output, atol=1e-5)
    assert found.difference < 1e-5
    # the plane keeps the weighted average
    np.testing.assert_allclose(found.weights @ found.plane, found.plane_output, atol=1e-5)


def test_the_figures_show_the_weights_and_the_star_at_the_mix():
    mix = weighted_average(SCORES, INFO)
    fig = scores_and_weights(list(WORDS), mix.scores, mix.weights, highlight=mix.largest)
    np.testing.assert_allclose(fig.data[0].y, SCORES)
    np.testing.assert_allclose(fig.data[1].y, mix.weights)
    plane = mix_plane(list(WORDS), INFO, mix.weights, mix.output, title="t")
    star = plane.data[-1]
    assert (star.x[0], star.y[0]) == pytest.approx(tuple(mix.output))
    np.testing.assert_allclose(plane.data[-2].customdata, mix.weights)


def _weights_shown(at) -> np.ndarray:
    fig = next(f for f in figures(at) if len(f["data"]) == 2 and f["data"][1]["type"] == "bar")
    return plotly_array(fig["data"][1]["y"])


def test_the_page_follows_edited_scores():
    at = app_test("lesson_average")
    assert not at.exception, at.exception
    before = _weights_shown(at)
    np.testing.assert_allclose(before, weighted_average(SCORES, INFO).weights, atol=1e-12)
    assert [m.value for m in at.metric][2] == "[1.63, 0.66]"
    edited = app_test("lesson_average", avg_table={"edited_rows": {1: {"score": 10.0}}})
    assert not edited.exception, edited.exception
    after = _weights_shown(edited)
    scores = list(SCORES)
    scores[1] = 10.0
    expected = torch.softmax(torch.tensor(scores, dtype=torch.float64), dim=0).numpy()
    np.testing.assert_allclose(after, expected, atol=1e-12)
    assert after.argmax() == 1 and not np.allclose(after, before)
    assert edited.metric[0].delta == "chases"


@pytest.mark.parametrize("state", [{"avg_table": "zzz"},
                                   {"avg_table": {"edited_rows": {99: {"score": 1.0}}}},
                                   {"avg_table": {"edited_rows": {0: {"word": "dog"}}}},
                                   {"avg_table": {"deleted_rows": [0]}}])
def test_remembered_edits_the_table_cannot_apply_are_forgotten(state):
    at = app_test("lesson_average", **state)
    assert not at.exception, at.exception
    assert any("could not be read" in w.value for w in at.warning)
    np.testing.assert_allclose(_weights_shown(at), weighted_average(SCORES, INFO).weights)


def test_an_empty_score_is_said_on_the_page():
    at = app_test("lesson_average", avg_table={"edited_rows": {0: {"score": None}}})
    assert not at.exception, at.exception
    assert any("empty" in e.value for e in at.error)
