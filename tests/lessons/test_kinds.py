"""Lesson §4.7, the three kinds of attention: the table's answers derived from the trace (encoder
self-attention looks ahead, the decoder's does not: its upper triangle is exactly 0), the shapes
are the trace's, and the page's heatmaps are the trace's weights."""

from __future__ import annotations

import numpy as np
import pytest

from model.lessons.kinds import KINDS, three_kinds, upper_triangle_zero
from tests.helpers import app_test, figures, plotly_array


@pytest.fixture(scope="module")
def trace():
    from model import load

    return load("own-translator", device="cpu").trace("The cat sat on the mat")


def test_encoder_self_looks_ahead_and_decoder_self_does_not(trace):
    views = {view.name: view for view in three_kinds(trace, 0, 0)}
    encoder, decoder, cross = (views[name] for name in KINDS)
    assert encoder.looks_ahead is True and encoder.upper_zero is False
    assert decoder.looks_ahead is False and decoder.upper_zero is True
    assert cross.looks_ahead is None and cross.from_encoder
    # checked here without the lesson's code: every layer and head above the diagonal
    stack = trace.stack("decoder.self")
    rows, cols = np.triu_indices(stack.shape[-1], k=1)
    assert np.all(stack[:, :, rows, cols] == 0.0)
    assert np.any(trace.stack("encoder.self")[:, :, rows, cols] > 0)
    assert (encoder.query_axis, encoder.key_axis) == ("source", "source")
    assert (decoder.query_axis, decoder.key_axis) == ("target", "target")
    assert (cross.query_axis, cross.key_axis) == ("target", "source")


def test_the_shapes_are_the_traces(trace):
    for layer in range(trace.layers("decoder.cross")):
        for view in three_kinds(trace, layer, 1):
            assert view.shape == tuple(trace.stack(view.name).shape[2:])
            assert view.shape == (len(trace.axes(view.name)[0]), len(trace.axes(view.name)[1]))
            np.testing.assert_array_equal(view.weights, trace.weights(view.name, layer, 1))


def test_the_upper_triangle_check():
    ones = np.ones((1, 1, 3, 3))
    assert upper_triangle_zero(ones) is False
    assert upper_triangle_zero(np.tril(ones)) is True
    assert upper_triangle_zero(np.ones((1, 1, 1, 1))) is None


def test_the_pages_heatmaps_are_the_traces_weights_at_the_chosen_layer_and_head(trace):
    at = app_test("lesson_kinds", kd_layer=1, kd_head=2)
    assert not at.exception, at.exception
    panels = figures(at)
    assert len(panels) == 3
    for fig, name in zip(panels, KINDS):
        z = plotly_array(fig["data"][0]["z"])
        expected = trace.weights(name, 1, 2).astype(float)
        allowed = trace.mask(name, 1)
        np.testing.assert_allclose(np.where(allowed, z, 0.0), expected, atol=1e-6)
        assert np.isnan(z[~allowed]).all() and not np.isnan(z[allowed]).any()
    (frame,) = at.dataframe
    table = frame.value
    assert list(table.iloc[:, 3]) == ["6 × 6"] * 3
    ahead = list(table.iloc[:, 4])
    assert ahead[0].startswith("✅") and ahead[1].startswith("❌") and ahead[2].startswith("—")
    assert [y["layout"]["yaxis"]["title"]["text"] for y in panels][0].startswith("Q:")
    at.selectbox(key="kd_head").set_value(0).run()
    assert not at.exception, at.exception
    z = plotly_array(figures(at)[2]["data"][0]["z"])
    np.testing.assert_allclose(z, trace.weights("decoder.cross", 1, 0), atol=1e-6)
