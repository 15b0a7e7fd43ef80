"""Lesson §4.5, every word at once: the loop's rows are the one product's (against torch's own
softmax and matmul on §4.3's numbers), 它's row is §4.3's [0.85, 1.25] with the lesson's rounding,
the timing gives a positive median for every length, and a timing too large is refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.lessons.all_at_once import (
    MAX_TIMED_ROWS,
    check_rows,
    every_word,
    loop_and_product_times,
    loop_equals_product,
)
from model.lessons.hand import SEED_K, SEED_Q, SEED_V, seed_inputs
from tests.helpers import app_test, figures, plotly_array
from viz.lessons.all_at_once import timing_chart, weight_matrix


def _torch_reference():
    """softmax(QKᵀ/√d_k)·V with torch's own ops, each word's query its key, 它's §4.3's q."""
    K = torch.tensor(SEED_K, dtype=torch.float64)
    V = torch.tensor(SEED_V, dtype=torch.float64)
    Q = K.clone()
    Q[-1] = torch.tensor(SEED_Q, dtype=torch.float64)
    weights = torch.softmax(Q @ K.T / math.sqrt(K.shape[1]), dim=-1)
    return (weights @ V).numpy(), weights.numpy()


def test_the_loops_rows_are_the_products_rows():
    found = every_word(seed_inputs())
    output, weights = _torch_reference()
    np.testing.assert_allclose(found.loop_output, output, atol=1e-12)
    np.testing.assert_allclose(found.loop_weights, weights, atol=1e-12)
    np.testing.assert_allclose(found.product_output, output, atol=1e-12)
    np.testing.assert_allclose(found.product_weights, weights, atol=1e-12)
    assert found.difference < 1e-12
    np.testing.assert_allclose(found.loop_weights.sum(axis=1), 1.0)


def test_its_row_is_the_hand_calculations_result_to_the_lessons_rounding():
    found = every_word(seed_inputs(), decimals=2)
    np.testing.assert_array_equal(found.loop_output[-1], [0.85, 1.25])
    np.testing.assert_array_equal(found.loop_weights[-1], [0.30, 0.15, 0.25, 0.30])
    np.testing.assert_array_equal(found.lesson_row, [0.85, 1.25])
    exact = every_word(seed_inputs())  # exact, it rounds to [0.85, 1.24]: the lesson rounds
    np.testing.assert_allclose(exact.loop_output[-1], _torch_reference()[0][-1], atol=1e-12)
    np.testing.assert_array_equal(exact.lesson_row, [0.85, 1.25])


def test_loop_and_product_agree_on_random_rows():
    assert loop_equals_product(n=32, d=16) < 1e-12


def test_the_timing_gives_a_positive_median_for_every_length():
    timing = loop_and_product_times((4, 16, 64), device="cpu", repeats=3)
    assert timing.rows == (4, 16, 64) and not timing.skipped
    assert all(t > 0 for t in timing.loop + timing.product)
    assert all(1 <= r <= 3 for r in timing.loop_runs + timing.product_runs)
    assert timing.device == "cpu" and timing.d == 64
    fig = timing_chart(timing.rows, timing.loop, timing.product, device=timing.device)
    np.testing.assert_allclose(fig.data[0].y, np.array(timing.loop) * 1e3)
    np.testing.assert_allclose(fig.data[1].customdata, timing.speedup)


@pytest.mark.parametrize("rows", [(), (0, 4), (4, MAX_TIMED_ROWS + 1)])
def test_lengths_out_of_range_are_refused(rows):
    with pytest.raises(ValueError):
        check_rows(rows)
    with pytest.raises(ValueError):
        loop_and_product_times(rows)


def test_a_timing_over_a_requests_memory_is_refused_before_it_runs(monkeypatch):
    from app_pages.cache import getters
    from app_pages.cache.limits import BudgetError, Limits

    monkeypatch.setattr(getters, "limits", lambda: Limits(request_bytes=10_000))
    with pytest.raises(BudgetError, match="4,096 rows"):
        getters.get_loop_timing("cpu", (4, 4096))


def test_the_weight_matrix_outlines_its_row():
    found = every_word(seed_inputs(), decimals=2)
    words = list(seed_inputs().words)
    fig = weight_matrix(words, found.loop_weights, row=3)
    np.testing.assert_allclose(fig.data[0].z, found.loop_weights)
    (shape,) = fig.layout.shapes
    assert (shape.y0, shape.y1) == (2.5, 3.5)
    assert list(fig.data[0].text[3]) == ["0.30", "0.15", "0.25", "0.30"]


def test_the_page_shows_the_product_and_a_timing():
    at = app_test("lesson_all_at_once", aao_step=5, aao_rows=16)
    assert not at.exception, at.exception
    assert any("[0.85, 1.25]" in s.value for s in at.success)
    shown = figures(at)
    matrix = next(f for f in shown if f["data"][0]["type"] == "heatmap")
    np.testing.assert_allclose(plotly_array(matrix["data"][0]["z"]).reshape(4, 4)[3],
                               [0.30, 0.15, 0.25, 0.30])
    timing = next(f for f in shown if f["data"][0]["type"] == "scatter")
    assert list(plotly_array(timing["data"][0]["x"])) == [4, 16]
    assert (plotly_array(timing["data"][0]["y"]) > 0).all()


@pytest.mark.parametrize("state", [{"aao_step": 99}, {"aao_step": "x"}, {"aao_rows": 5000},
                                   {"aao_rows": "many"}, {"aao_rounding": "nope"}])
def test_the_page_survives_out_of_range_state(state):
    at = app_test("lesson_all_at_once", **state)
    assert not at.exception, at.exception
    assert not at.error
