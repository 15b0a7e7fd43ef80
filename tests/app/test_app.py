"""The app under Streamlit's AppTest: it runs, and the selectors drive the figures."""

from __future__ import annotations

import numpy as np
import pytest

from app_pages.frame.navigation import script
from model import load
from tests.helpers import SEED_SENTENCE, app_test, plotly_array, shown
from tests.helpers import figures as _figures


def _run_app():
    """Explore with own-random, the model these tests were written for."""
    return app_test("explore", timeout=120, model_choice="own-random")


def test_app_runs_without_exception():
    at = _run_app()
    assert not at.exception
    assert at.title[0].value == "Explore attention"
    assert len(at.get("plotly_chart")) == 2


def test_changing_layer_and_head_shows_that_heads_weights(seed_trace):
    at = _run_app()
    at.selectbox(key="kind").set_value("decoder.cross").run()
    at.selectbox(key="layer").set_value(4).run()
    at.selectbox(key="head").set_value(6).run()
    assert not at.exception
    heatmap, grid = _figures(at)
    np.testing.assert_allclose(plotly_array(heatmap["data"][0]["z"]),
                               seed_trace.weights("decoder.cross", 4, 6), atol=1e-6)
    for h in range(8):
        np.testing.assert_allclose(plotly_array(grid["data"][h]["z"]),
                                   seed_trace.weights("decoder.cross", 4, h), atol=1e-6)
    at.selectbox(key="head").set_value(1).run()
    heatmap, _ = _figures(at)
    np.testing.assert_allclose(plotly_array(heatmap["data"][0]["z"]),
                               seed_trace.weights("decoder.cross", 4, 1), atol=1e-6)


def test_text_box_changes_the_tokens_and_empty_text_is_explained():
    at = _run_app()
    at.text_area(key="text").set_value("a dog and a cat").run()
    heatmap, _ = _figures(at)
    assert heatmap["layout"]["xaxis"]["ticktext"] == ["a", "dog", "and", "a", "cat"]
    at.text_area(key="text").set_value("  ").run()
    assert not at.exception
    assert any("Type some text" in info.value for info in at.info)


def _translate_page():
    return app_test("translate", timeout=120)


def test_translate_page_translates_the_seed_sentence():
    at = _translate_page()
    assert not at.exception
    assert at.title[0].value == "Translate English → Chinese"
    assert len(at.get("plotly_chart")) == 4
    # it opens at the first step, and nothing gives a later word away
    assert at.slider(key="step").value == 1
    assert any(m.value == "### 猫 …" for m in at.markdown)
    markdown = " ".join(m.value for m in [*at.main.markdown, *at.main.caption])
    assert not any(word in markdown for word in ("坐", "垫子"))
    alignment = _figures(at)[2]
    assert alignment["layout"]["yaxis"]["ticktext"] == ["猫"]
    at.slider(key="step").set_value(6).run()
    assert any("猫 坐 在 垫子 上" in m.value for m in at.markdown)
    assert len(_figures(at)[2]["layout"]["yaxis"]["ticktext"]) == 6


def test_step_slider_moves_every_figure_to_that_step():
    translator = load("own-translator", device="cpu")
    reference = translator.trace(SEED_SENTENCE)
    at = _translate_page()
    at.slider(key="step").set_value(2).run()
    self_fig, cross_fig, _, topk_fig = _figures(at)
    assert plotly_array(self_fig["data"][0]["z"]).shape == (2, 2)
    last = reference.layers("decoder.cross") - 1
    np.testing.assert_allclose(plotly_array(cross_fig["data"][0]["x"]),
                               reference.mean_weights("decoder.cross", last)[1], atol=1e-6)
    assert topk_fig["layout"]["yaxis"]["ticktext"][0] == "坐"
    at.slider(key="step").set_value(4).run()
    self_fig, cross_fig, _, topk_fig = _figures(at)
    assert plotly_array(self_fig["data"][0]["z"]).shape == (4, 4)
    np.testing.assert_allclose(plotly_array(cross_fig["data"][0]["x"]),
                               reference.mean_weights("decoder.cross", last)[3], atol=1e-6)
    assert topk_fig["layout"]["yaxis"]["ticktext"][0] == "垫子"


def test_unknown_words_are_reported_not_dropped():
    at = _translate_page()
    at.text_input(key="translate_text").set_value("The zebra sat on the spaceship").run()
    assert not at.exception
    message = shown(at.error[0].value)
    assert "“zebra”" in message and "“spaceship”" in message
    assert not at.get("plotly_chart")


@pytest.mark.slow
def test_explore_page_runs_with_minilm():
    at = app_test("explore", timeout=180)
    at.selectbox(key="model_choice").set_value("minilm").run()
    assert not at.exception and not at.error
    heatmap, grid = _figures(at)
    first, second = heatmap["layout"]["xaxis"]["ticktext"][:2]
    assert "[CLS]" in first and "<i>" in first  # a special token, marked
    assert second == "the"
    assert len([d for d in grid["data"] if d["name"] == "weights"]) == 12


def test_explore_page_runs_with_a_tiny_local_checkpoint(tiny_checkpoints):
    path = tiny_checkpoints["llama"]
    reference = load(str(path), device="cpu").trace(SEED_SENTENCE)
    at = _run_app()
    at.selectbox(key="model_choice").set_value("other…").run()
    assert "hub id" in at.info[0].value
    at.text_input(key="model_other").set_value(str(path)).run()
    assert not at.exception and not at.error
    at.selectbox(key="head").set_value(3).run()
    heatmap, _ = _figures(at)
    z = plotly_array(heatmap["data"][0]["z"])
    allowed = reference.mask("decoder.self")
    np.testing.assert_allclose(z[allowed], reference.weights("decoder.self", 0, 3)[allowed],
                               atol=1e-6)
    assert np.isnan(z[~allowed]).all()
    assert "K/V head 1" in at.selectbox(key="head").format_func(3)


def test_an_unreachable_hub_id_is_explained_on_the_page(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = _run_app()
    at.selectbox(key="model_choice").set_value("other…").run()
    at.text_input(key="model_other").set_value("someone/not-cached").run()
    assert not at.exception
    assert "hub cannot be reached" in shown(at.error[0].value)


def test_uploaded_files_are_decoded_as_utf8_or_explained():
    from model.corpus.sentences import decode_text as decode_upload

    assert decode_upload("猫 坐 在 垫子 上".encode()) == ("猫 坐 在 垫子 上", "UTF-8")
    assert decode_upload(b"\xef\xbb\xbfThe cat") == ("The cat", "UTF-8")  # BOM dropped
    # Chinese text saved on Windows is usually GBK, which GB18030 reads
    assert decode_upload("猫坐在垫子上。".encode("gbk")) == ("猫坐在垫子上。", "GB18030")
    with pytest.raises(ValueError, match="notes.txt is neither UTF-8 nor GB18030/GBK text"):
        decode_upload("caf\u00e9".encode("latin-1"), "notes.txt")


def test_fitting_the_colours_scales_both_figures_to_the_layers_largest_weight(seed_trace):
    at = _run_app()
    at.radio(key="colour_scale").set_value("fit").run()
    heatmap, grid = _figures(at)
    # the largest weight away from the first token (its row and its column)
    top = float(seed_trace.layer_weights("encoder.self", 0)[:, 1:, 1:].max())
    assert heatmap["layout"]["coloraxis"]["cmax"] == pytest.approx(top)
    assert grid["layout"]["coloraxis"]["cmax"] == pytest.approx(top)


def test_the_sidebar_keeps_the_users_text_and_model_across_pages_that_hide_them():
    at = _run_app()
    at.selectbox(key="model_choice").set_value("own-translator").run()
    at.text_area(key="text").set_value("a dog slept under the table").run()
    at.switch_page("app_pages/views/translate.py").run()  # hides the text box
    at.switch_page("app_pages/views/positions.py").run()
    at.switch_page("app_pages/views/explore.py").run()
    assert at.text_area(key="text").value == "a dog slept under the table"
    assert at.selectbox(key="model_choice").value == "own-translator"


def test_an_nllb_style_checkpoint_translates_on_translate_and_shows_on_explore(nllb_style):
    """A user's translation checkpoint (NLLB's tokenizer on M2M100) in the sidebar: Translate
    uses it with its own greedy generate (Chinese first, forced), Explore shows its heads."""
    reference = load(str(nllb_style), device="cpu").trace(SEED_SENTENCE)
    at = app_test("translate", timeout=120, model_choice="other…", model_other=str(nllb_style))
    assert not at.exception and not at.error
    assert any("Translating with the sidebar's model" in shown(c.value) for c in at.caption)
    at.slider(key="step").set_value(1).run()
    assert not at.exception
    self_fig, cross_fig, _alignment, topk_fig = _figures(at)
    last = reference.layers("decoder.cross") - 1
    np.testing.assert_allclose(plotly_array(cross_fig["data"][0]["x"]),
                               reference.mean_weights("decoder.cross", last)[0], atol=1e-6)
    assert topk_fig["layout"]["yaxis"]["ticktext"][0] == "zho_Hans"  # forced: probability 1
    at.switch_page(script("explore")).run()
    assert not at.exception and not at.error
    heatmap = _figures(at)[0]
    assert plotly_array(heatmap["data"][0]["z"]).shape[1] == len(reference.source_tokens)
    assert any("attention interface" in shown(c.value) for c in at.caption)


@pytest.mark.parametrize("model_type, says", [
    ("granite_swa", "sum to less than 1"),  # its sink takes the rest of each row
    ("bloom", "eager output_attentions"),  # its attention bypasses the interface
    ("qwen3_next", "attention interface")])
def test_explore_says_how_a_checkpoint_was_captured(model_type, says):
    from tests.architectures import build, model_types, sweep_root

    path = build(model_type, model_types()[model_type], sweep_root())
    at = app_test("explore", model_choice="other…", model_other=str(path))
    assert not at.exception and not at.error
    assert any(says in shown(c.value) for c in at.caption), [c.value for c in at.caption]
