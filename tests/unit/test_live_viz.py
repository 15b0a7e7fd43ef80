"""The live class's reveal figures (viz.live): the class's votes as shares beside the model's
weights, and the class's numbers beside the model's."""

from __future__ import annotations

import numpy as np
import pytest

from viz.live import numbers_figure, votes_figure


def test_votes_are_drawn_as_shares_with_their_counts_and_the_models_weights():
    fig = votes_figure(["The", "cat", "mat"], [1, 3, 0], weights=[0.1, 0.2, 0.7], answer=2)
    bars, weights = fig.data
    np.testing.assert_allclose(bars.x, [0.25, 0.75, 0.0])
    assert [count for count, _label in bars.customdata] == [1, 3, 0]
    assert list(weights.x) == [0.1, 0.2, 0.7]
    colours = list(bars.marker.color)
    assert colours[2] != colours[0] == colours[1]  # the model's answer stands out
    assert list(fig.layout.yaxis.ticktext) == ["The", "cat", "mat"]


def test_no_votes_yet_draw_empty_bars_and_bad_shapes_are_refused():
    fig = votes_figure(["a", "b"], [0, 0])
    assert list(fig.data[0].x) == [0, 0] and len(fig.data) == 1
    with pytest.raises(ValueError):
        votes_figure(["a", "b"], [1])
    with pytest.raises(ValueError):
        votes_figure(["a", "b"], [1, 1], weights=[1.0])
    with pytest.raises(ValueError):
        votes_figure(["a", "b"], [1, 1], answer=2)


def test_a_token_that_looks_like_markup_is_shown_as_text():
    fig = votes_figure(["<b>x</b>", "y"], [1, 0])
    assert "<b>" not in "".join(fig.layout.yaxis.ticktext)


def test_numbers_are_a_histogram_with_the_models_number_marked():
    fig = numbers_figure([0.9, 0.99, 1.0], 0.999983)
    assert list(fig.data[0].x) == [0.9, 0.99, 1.0]
    line = fig.layout.shapes[0]
    assert line.x0 == line.x1 == pytest.approx(0.999983)
    assert "0.999983" in fig.layout.annotations[0].text
