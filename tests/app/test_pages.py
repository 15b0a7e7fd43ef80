"""Every analysis page runs under AppTest for each family of model and drives its figures."""

from __future__ import annotations

import numpy as np
import pytest

from model.analysis.statistics import head_stats
from tests.helpers import SEED_SENTENCE, app_test, plotly_array
from tests.helpers import figures as _figures

PAGES = ["model_view", "head_view", "mask", "rollout", "stats", "positions", "shapes"]


def _page(page: str, spec: str = "own-random", text: str = SEED_SENTENCE):
    return app_test(page, model_choice=spec, text=text)


@pytest.mark.parametrize("spec", [
    "own-random", "own-translator",
    pytest.param("minilm", marks=pytest.mark.slow), pytest.param("smollm2", marks=pytest.mark.slow),
])
@pytest.mark.parametrize("page", PAGES)
def test_page_runs_without_exception(page, spec):
    at = _page(page, spec)
    assert not at.exception, at.exception
    assert not at.error
    assert at.get("plotly_chart")


def test_mask_page_shows_minus_infinity_exactly_where_the_decoder_is_masked(seed_trace):
    reference = seed_trace
    at = _page("mask")
    at.selectbox(key="mask_layer").set_value(3).run()
    at.selectbox(key="mask_head").set_value(5).run()
    (fig,) = _figures(at)
    masked = plotly_array(fig["data"][2]["z"])
    forbidden = ~reference.mask("decoder.self")
    assert np.isnan(masked[forbidden]).all()
    np.testing.assert_allclose(masked[~forbidden],
                               reference.scores("decoder.self", 3, 5)[~forbidden], atol=1e-5)


def test_stats_page_draws_the_chosen_metric(seed_trace):
    reference = head_stats(seed_trace, "encoder.self")
    at = _page("stats")
    at.selectbox(key="st_metric").set_value("distance").run()
    fig = _figures(at)[0]
    np.testing.assert_allclose(plotly_array(fig["data"][0]["z"]), reference["distance"],
                               atol=1e-6)


def test_head_view_focus_keeps_one_tokens_lines():
    at = _page("head_view")
    at.selectbox(key="hv_focus").set_value(2).run()
    fig = _figures(at)[0]
    lines = [d for d in fig["data"] if d["mode"] == "lines" and "weight" in d["meta"]]
    assert lines and all(y == 2 for d in lines for y in d["y"][0::3])


def test_rollout_page_changes_with_the_layer_slider():
    at = _page("rollout")
    first = plotly_array(_figures(at)[0]["data"][0]["z"])
    at.slider(key="ro_layer").set_value(0).run()
    second = plotly_array(_figures(at)[0]["data"][0]["z"])
    assert not np.allclose(first, second)


def test_opening_a_head_from_another_page_shows_it_in_explore(seed_trace):
    reference = seed_trace
    at = _page("model_view")
    at.session_state["open_head"] = ("decoder.self", 4, 6)
    at.switch_page("app_pages/views/explore.py").run()
    assert not at.exception
    heatmap = _figures(at)[0]
    z = plotly_array(heatmap["data"][0]["z"])
    allowed = reference.mask("decoder.self")
    np.testing.assert_allclose(z[allowed], reference.weights("decoder.self", 4, 6)[allowed],
                               atol=1e-6)


def test_a_target_typed_for_an_encoder_decoder_does_not_break_single_stack_models(
        tiny_checkpoints):
    path = tiny_checkpoints["llama"]
    for page in ("stats", "rollout", "model_view"):
        at = app_test(page, model_choice="other…", model_other=str(path),
                      target="猫 坐 在 垫子 上")
        assert not at.exception and not at.error, page
