"""The sink toggle on the heatmap pages: with it on, each drawn row equals a direct
renormalisation of the model's weights without the first token (rows summing to 1), the colour
scale runs to the largest weight left, the mass left out is said; a learned sink is divided out
of each row; a remembered value that is not on or off is survived."""

from __future__ import annotations

import numpy as np
import pytest

from model import load
from model.analysis.faithfulness import sink_left_out
from tests.helpers import app_test, plotly_array
from tests.helpers import figures as _figures

pytestmark = pytest.mark.apptest
TEXT = "The cat sat on the mat because it was tired."


def _direct(weights: np.ndarray) -> np.ndarray:
    """Each row without its first key, divided by the rest: written out, row by row."""
    out = np.full(weights.shape, np.nan)
    for i, row in enumerate(np.asarray(weights, np.float64)):
        rest = row[1:].sum()
        if rest > 0:
            out[i, 1:] = row[1:] / rest
    return out


@pytest.fixture(scope="module")
def smollm2():
    return load("smollm2", device="cpu")


def test_explore_draws_each_row_renormalised_without_the_first_token(smollm2):
    at = app_test("explore", timeout=300, model_choice="smollm2", text=TEXT,
                  kind="decoder.self", layer=5, head=3)
    assert not at.exception, at.exception
    at.toggle(key="sink_out").set_value(True).run()
    assert not at.exception, at.exception
    heatmap, grid = _figures(at)
    trace = smollm2.trace(TEXT)
    weights = trace.weights("decoder.self", 5, 3)
    expected = _direct(weights)
    allowed = trace.mask("decoder.self", 5)
    drawn = plotly_array(heatmap["data"][0]["z"])
    np.testing.assert_allclose(drawn, np.where(allowed, expected, np.nan), atol=1e-6)
    rows = np.nansum(drawn[1:], axis=-1)  # the first row held only the sink: blank
    np.testing.assert_allclose(rows, 1.0, atol=1e-6)
    assert np.isnan(drawn[0]).all()
    assert heatmap["layout"]["coloraxis"]["cmax"] == pytest.approx(np.nanmax(expected), rel=1e-6)
    left = weights[:, 0]
    note = " ".join(c.value for c in at.caption)
    assert f"{left.mean():.1%}" in note and f"{left.max():.1%}" in note
    panels = [t for t in grid["data"] if t.get("name") == "weights"]
    assert len(panels) == trace.n_heads
    for h in range(trace.n_heads):  # the heads' grid follows
        np.testing.assert_allclose(plotly_array(panels[h]["z"]),
                                   np.where(allowed, _direct(trace.weights("decoder.self", 5, h)),
                                            np.nan), atol=1e-6)
    at.toggle(key="sink_out").set_value(False).run()
    heatmap, _grid = _figures(at)
    np.testing.assert_allclose(plotly_array(heatmap["data"][0]["z"]),
                               np.where(allowed, weights, np.nan), atol=1e-6)


def test_translate_and_head_statistics_follow_the_toggle():
    at = app_test("translate", timeout=300, sink_out=True)
    assert not at.exception, at.exception
    assert any("Sink left out" in c.value for c in at.caption)
    at = app_test("stats", timeout=300, model_choice="own-translator", sink_out=True)
    assert not at.exception, at.exception
    assert any("Sink left out" in c.value for c in at.caption)


def test_a_remembered_value_that_is_not_on_or_off_is_survived():
    at = app_test("explore", timeout=300, sink_out="yes please")
    assert not at.exception, at.exception
    assert at.toggle(key="sink_out").value is False


def test_a_learned_sink_is_divided_out_of_each_row():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 6))
    sink = rng.normal(size=(5, 1)) + 2  # a logit that takes weight and gives no value
    full = np.exp(np.concatenate([logits, sink], axis=1))
    weights = (full / full.sum(axis=1, keepdims=True))[:, :6]  # rows sum short of 1
    view = sink_left_out(weights)
    assert view.learned
    np.testing.assert_allclose(view.weights, weights / weights.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(view.weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(view.left_out, 1 - weights.sum(axis=1))


def test_the_note_is_said_in_chinese():
    import i18n

    with i18n.use("zh"):  # AppTest formats the widgets' options in the test's own thread
        at = app_test("explore", timeout=300, lang="zh", model_choice="smollm2", text=TEXT,
                      sink_out=True)
    assert not at.exception, at.exception
    assert any("已去掉注意力汇聚点" in c.value for c in at.caption)
    assert at.toggle(key="sink_out").proto.label == "去掉注意力汇聚点"


def test_the_model_view_leaves_the_sink_out_of_every_tile(smollm2):
    at = app_test("model_view", timeout=300, model_choice="smollm2", text=TEXT, sink_out=True)
    assert not at.exception, at.exception
    figure = _figures(at)[0]
    z = plotly_array(figure["data"][0]["z"])
    trace = smollm2.trace(TEXT)
    n = len(trace.axes("decoder.self")[0])
    for layer, head in ((0, 0), (5, 3), (trace.layers("decoder.self") - 1, 8)):
        tile = z[layer * (n + 1):layer * (n + 1) + n, head * (n + 1):head * (n + 1) + n]
        expected = _direct(trace.weights("decoder.self", layer, head))
        allowed = trace.mask("decoder.self", layer)
        np.testing.assert_allclose(np.where(allowed, tile, np.nan),
                                   np.where(allowed, expected, np.nan), atol=1e-6)
    assert any("Sink left out of every tile" in c.value for c in at.caption)
