"""The What moves page under AppTest: its four panels are the analysis' numbers for the chosen
head, the ablation and the ranking follow the heads chosen, and a remembered choice out of range
or a model whose parts cannot be reached is survived."""

from __future__ import annotations

import numpy as np
import pytest

from model import load
from model.analysis import moves
from tests.helpers import SEED_SENTENCE, app_test, plotly_array
from tests.helpers import figures as _figures

pytestmark = pytest.mark.apptest


@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


def _page(**state):
    return app_test("what_moves", timeout=300, **{"model_choice": "own-translator",
                                                   "text": SEED_SENTENCE, **state})


def test_the_four_panels_are_the_heads_numbers_and_follow_the_head(translator):
    at = _page()
    assert not at.exception, at.exception
    at.selectbox(key="wm_kind").set_value("encoder.self").run()
    at.selectbox(key="wm_layer").set_value(1).run()
    at.selectbox(key="wm_head").set_value(2).run()
    assert not at.exception, at.exception
    found = moves.what_moves(translator, SEED_SENTENCE, "encoder.self", 1, 2)
    figures = _figures(at)
    for figure, method in zip(figures, moves.METHODS):
        np.testing.assert_allclose(plotly_array(figure["data"][0]["z"]), found.method(method),
                                   atol=1e-6)
    at.selectbox(key="wm_head").set_value(0).run()
    other = moves.what_moves(translator, SEED_SENTENCE, "encoder.self", 1, 0)
    np.testing.assert_allclose(plotly_array(_figures(at)[1]["data"][0]["z"]), other.norm,
                               atol=1e-6)
    assert not np.allclose(other.norm, found.norm)
    # the query-key map: one point per query and key of the head
    qk = _figures(at)[-1]
    assert [len(plotly_array(t["x"])) for t in qk["data"]] == [6, 6]


def test_leaving_the_layers_heads_out_shows_the_other_translation():
    at = _page()
    at.selectbox(key="wm_kind").set_value("decoder.cross").run()
    at.selectbox(key="wm_layer").set_value(2).run()
    at.multiselect(key="wm_ablate").set_value([0, 1, 2, 3]).run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "老 鸟 睡" in text and "猫 坐 在 垫子 上" in text
    at.multiselect(key="wm_ablate").set_value([1]).run()
    assert any("same" in c.value for c in at.caption)
    at.toggle(key="wm_rank").set_value(True).run()
    assert not at.exception, at.exception
    bars = _figures(at)[-2]
    assert len(bars["data"][0]["x"]) == 4
    heights = list(bars["data"][0]["y"])
    assert heights == sorted(heights, reverse=True)


def test_remembered_choices_out_of_range_are_survived():
    at = _page(wm_kind="decoder.self", wm_layer=99, wm_head=-3, wm_ablate=[17],
               wm_projection="umap")
    assert not at.exception, at.exception
    assert at.selectbox(key="wm_layer").value == 0


def test_a_cross_attention_head_has_no_rollout_and_says_why():
    at = _page(wm_kind="decoder.cross")
    assert not at.exception, at.exception
    assert len(_figures(at)) == 3 + 1  # three panels and the map
    assert any("No rollout for cross-attention" in c.value for c in at.caption)


def test_a_text_past_the_limit_is_refused_with_the_limit(monkeypatch):
    monkeypatch.setattr(moves, "MOVES_LIMIT", 5)  # the seed sentence has 6 tokens
    at = _page()
    assert not at.exception, at.exception
    assert any("up to 5 tokens" in i.value and "has 6" in i.value for i in at.info)
    assert not _figures(at)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["minilm", "smollm2"])
def test_the_bundled_pretrained_models_show_every_view(spec):
    at = _page(model_choice=spec, text="The cat sat on the mat.")
    assert not at.exception, at.exception
    loaded = load(spec, device="cpu")
    kind = loaded.family.kinds[0]
    found = moves.what_moves(loaded, "The cat sat on the mat.", kind, 0, 0)
    np.testing.assert_allclose(plotly_array(_figures(at)[1]["data"][0]["z"]),
                               np.where(found.allowed, found.norm, np.nan), atol=1e-5)
    at.multiselect(key="wm_ablate").set_value([0]).run()
    assert not at.exception, at.exception
    assert at.metric[0].value


def test_the_page_offers_the_trace_with_what_moves():
    at = _page()
    labels = [b.proto.label for b in at.get("download_button")]
    assert "This trace with what moves (.npz)" in labels  # its file: with_extras, tested in
    # tests/unit/test_moves.py::test_the_export_carries_what_moves_and_reads_it_back
