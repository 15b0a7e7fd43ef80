"""Lessons §3.2–3.3 (the architecture), §4.2 (query, key, value) and §4.6 (multi-head): every
number is read from the own model's forward pass with hooks and checked against torch's own
functions and the model's own outputs; the figures, the pages in both languages, and the
architecture's clicks in Chromium."""

from __future__ import annotations

import math
import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import i18n
from app_pages.frame.navigation import script
from model import load
from model.lessons import architecture, multihead, network, qkv
from model.own.hooks import record
from tests.helpers import (
    CHROMIUM,
    SEED_SENTENCE,
    app_test,
    figures,
    plotly_array,
    tiny_own_model,
)
from viz.lessons import architecture as arch_fig
from viz.lessons import multihead as heads_fig
from viz.lessons import qkv as qkv_fig
from viz.style import HIGHLIGHT_COLOR, MASK_COLOR, head_color

ATOL = 1e-4


@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


@pytest.fixture(scope="module")
def random_model():
    return load("own-random", device="cpu")


@pytest.fixture(scope="module")
def seed_trace(translator):
    return translator.trace(SEED_SENTENCE)


def _inputs(model, trace):
    return network.model_inputs(model, trace)


# --- §3.2–3.3: residual + LayerNorm --------------------------------------------------------------

def test_layernorm_output_is_torch_layer_norm_of_x_plus_sublayer(translator, seed_trace):
    streams = architecture.residual_streams(translator, seed_trace)
    network = translator.network
    assert set(streams.layers) == {("encoder", i) for i in range(3)} | {
        ("decoder", i) for i in range(3)}
    checked = 0
    for (stack, layer), measured in streams.layers.items():
        module = getattr(network, stack).layers[layer]
        names = [r.sublayer for r in measured.residuals]
        assert names == [name for name, _residual in architecture.SUBLAYERS[stack]]
        for residual, (_name, attribute) in zip(measured.residuals, architecture.SUBLAYERS[stack]):
            norm = getattr(module, attribute).norm
            # the LayerNorm's input is x + sublayer(x) (dropout is off in eval)
            np.testing.assert_allclose(residual.total, residual.x + residual.update, atol=ATOL)
            expected = F.layer_norm(torch.tensor(residual.total), norm.normalized_shape,
                                    norm.weight.detach().double(), norm.bias.detach().double(),
                                    norm.eps)
            np.testing.assert_allclose(residual.normed, expected.numpy(), atol=ATOL)
            checked += 1
    assert checked == 3 * 2 + 3 * 3


def test_the_hooked_streams_reproduce_the_models_forward_output(translator, seed_trace):
    streams = architecture.residual_streams(translator, seed_trace)
    network = translator.network
    inputs = _inputs(translator, seed_trace)
    with torch.inference_mode():
        logits = network(**inputs)[0].double().numpy()  # the model's own forward pass
        memory, _mask = network.encode(inputs["src_ids"])
        embedded = network.tgt_embed(inputs["tgt_ids"])[0].double().numpy()
    np.testing.assert_allclose(streams.logits, logits, atol=ATOL)
    # each sublayer's output is the next one's input, layer after layer
    for stack, n_layers in (("encoder", 3), ("decoder", 3)):
        chain = [r for layer in range(n_layers) for r in streams.layers[stack, layer].residuals]
        for before, after in zip(chain, chain[1:]):
            np.testing.assert_array_equal(before.normed, after.x)
    np.testing.assert_allclose(streams.layers["encoder", 2].residuals[-1].normed,
                               memory[0].double().numpy(), atol=ATOL)
    np.testing.assert_allclose(streams.layers["decoder", 0].residuals[0].x, embedded, atol=ATOL)
    last = torch.tensor(streams.layers["decoder", 2].residuals[-1].normed, dtype=torch.float32)
    with torch.inference_mode():
        again = network.generator(last).double().numpy()
    np.testing.assert_allclose(again, logits, atol=1e-3)


def test_sizes_are_the_l2_norms_of_the_four_vectors(translator, seed_trace):
    measured = architecture.residual_streams(translator, seed_trace).layers["decoder", 1]
    sizes = measured.sizes(3)
    assert sizes.shape == (3, 4)
    for row, residual in zip(sizes, measured.residuals):
        expected = [math.sqrt(float(np.sum(getattr(residual, part)[3] ** 2)))
                    for part in architecture.PARTS]
        np.testing.assert_allclose(row, expected, rtol=1e-9)


def test_the_ffn_widths_are_the_loaded_models(translator, random_model):
    trace = translator.trace(SEED_SENTENCE)
    streams = architecture.residual_streams(translator, trace)
    n_source, n_target = len(trace.source_tokens), len(trace.target_tokens)
    assert (streams.d_model, streams.d_ff) == (128, 512)
    assert streams.layers["encoder", 0].ffn_shapes == ((1, n_source, 128), (1, n_source, 512),
                                                       (1, n_source, 128))
    assert streams.layers["decoder", 2].ffn_shapes[1] == (1, n_target, 512)
    full = architecture.residual_streams(random_model, random_model.trace(SEED_SENTENCE))
    assert full.layers["encoder", 5].ffn_shapes == ((1, 6, 512), (1, 6, 2048), (1, 6, 512))
    assert len(full.layers) == 12  # the seed's 6 + 6 layers


def test_a_single_stack_model_has_its_one_stack_only():
    model = tiny_own_model("decoder-only")
    trace = model.trace("a b c a")
    streams = architecture.residual_streams(model, trace)
    assert set(streams.layers) == {("decoder", 0), ("decoder", 1)}
    assert [r.sublayer for r in streams.layers["decoder", 0].residuals] == ["self_attn", "ffn"]
    assert architecture.stacks_of(trace) == ["decoder"]


# --- §4.2: query, key, value ---------------------------------------------------------------------

@pytest.mark.parametrize("name, layer, head, query", [
    ("encoder.self", 0, 0, 2), ("encoder.self", 2, 3, 5), ("decoder.self", 1, 2, 3),
    ("decoder.cross", 2, 1, 4)])
def test_dot_products_over_root_d_head_are_the_models_own_scores(translator, seed_trace, name,
                                                                  layer, head, query):
    seen = qkv.query_key_value(translator, seed_trace, name, layer, head, query)
    assert seen.d_head == 32
    scores = seed_trace.scores(name, layer, head)[query]  # captured by the trace's own hooks
    np.testing.assert_allclose(seen.dots / math.sqrt(32), scores, atol=ATOL)
    np.testing.assert_allclose(seen.scaled, scores, atol=ATOL)
    np.testing.assert_allclose(seen.scores, scores, atol=ATOL)
    np.testing.assert_allclose(seen.weights, seed_trace.weights(name, layer, head)[query],
                               atol=1e-5)
    np.testing.assert_array_equal(seen.allowed, seed_trace.mask(name, layer)[query])


def test_the_heads_slices_turn_the_input_into_its_q_k_and_v(translator, seed_trace):
    for name, layer in (("encoder.self", 0), ("decoder.self", 2), ("decoder.cross", 1)):
        seen = qkv.query_key_value(translator, seed_trace, name, layer, 1, 2)
        assert seen.W_Q.shape == (32, 128) and seen.b_Q.shape == (32,)
        np.testing.assert_allclose(seen.x @ seen.W_Q.T + seen.b_Q, seen.q, atol=ATOL)
        np.testing.assert_allclose(seen.keys_in @ seen.W_K.T + seen.b_K, seen.k, atol=ATOL)
        np.testing.assert_allclose(seen.keys_in @ seen.W_V.T + seen.b_V, seen.v, atol=ATOL)
        module = network.attention_module(translator.network, name, layer)
        np.testing.assert_array_equal(seen.W_Q,
                                      module.W_Q.weight[32:64].detach().double().numpy())


def test_the_input_of_layer_0_is_the_word_times_root_d_model_plus_its_position(translator,
                                                                               seed_trace):
    seen = qkv.query_key_value(translator, seed_trace, "encoder.self", 0, 0, 2)
    table = translator.position_table(8)
    np.testing.assert_allclose(seen.position, table[2], atol=1e-6)
    assert seen.scale == pytest.approx(math.sqrt(128))
    np.testing.assert_allclose(seen.word + seen.position, seen.embedded, atol=ATOL)
    np.testing.assert_allclose(seen.x, seen.embedded, atol=ATOL)  # layer 0 reads it as it is
    row = translator.network.src_embed.token.weight[seed_trace.source_ids[2]]
    np.testing.assert_allclose(seen.token_embedding, row.detach().double().numpy(), atol=1e-6)
    deeper = qkv.query_key_value(translator, seed_trace, "encoder.self", 1, 0, 2)
    assert np.abs(deeper.x - deeper.embedded).max() > 0.1  # layer 1 reads what layer 0 made


def test_the_key_shown_beside_the_query_is_its_own_or_the_one_it_weighs_most(translator,
                                                                             seed_trace):
    own = qkv.query_key_value(translator, seed_trace, "encoder.self", 1, 0, 4)
    assert own.key_position == 4
    cross = qkv.query_key_value(translator, seed_trace, "decoder.cross", 2, 0, 3)
    assert cross.key_position == int(np.argmax(seed_trace.weights("decoder.cross", 2, 0)[3]))


def test_own_random_queries_have_the_seeds_width(random_model):
    trace = random_model.trace(SEED_SENTENCE)
    seen = qkv.query_key_value(random_model, trace, "decoder.self", 3, 7, 4)
    assert (seen.d_model, seen.d_head) == (512, 64)
    assert seen.q.shape == (64,) and seen.k.shape == (7, 64)  # <bos> and the six words
    np.testing.assert_allclose(seen.scaled, trace.scores("decoder.self", 3, 7)[4], atol=ATOL)
    assert seen.allowed.tolist() == [True] * 5 + [False] * 2


# --- §4.6: multi-head ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, layer", [("encoder.self", 1), ("decoder.self", 0),
                                         ("decoder.cross", 2)])
def test_concatenating_the_heads_and_applying_w_o_reproduces_the_modules_output(
        translator, seed_trace, name, layer):
    heads = multihead.heads_of_layer(translator, seed_trace, name, layer)
    module = network.attention_module(translator.network, name, layer)
    concatenated = np.concatenate(list(heads.z), axis=-1)  # head 0's columns, then head 1's, …
    np.testing.assert_allclose(concatenated, heads.concat, atol=1e-6)
    for head in range(heads.n_heads):
        np.testing.assert_array_equal(heads.concat[:, heads.head_columns(head)], heads.z[head])
    w_o = module.W_O.weight.detach().double().numpy()
    b_o = module.W_O.bias.detach().double().numpy()
    np.testing.assert_allclose(concatenated @ w_o.T + b_o, heads.output, atol=ATOL)
    np.testing.assert_allclose(heads.patterns, seed_trace.layer_weights(name, layer), atol=1e-5)
    np.testing.assert_array_equal(heads.allowed, seed_trace.mask(name, layer))


def test_own_random_shows_the_seeds_shapes(random_model):
    trace = random_model.trace(SEED_SENTENCE)
    heads = multihead.heads_of_layer(random_model, trace, "encoder.self", 0)
    B, L = 1, 6
    assert heads.shapes == {"input": (B, L, 512), "q": (B, 8, L, 64), "k": (B, 8, L, 64),
                            "v": (B, 8, L, 64), "pattern": (B, 8, L, L), "z": (B, 8, L, 64),
                            "concat": (B, L, 512), "output": (B, L, 512)}
    cross = multihead.heads_of_layer(random_model, trace, "decoder.cross", 5)
    assert cross.shapes["pattern"] == (1, 8, L + 1, L)  # target queries × source keys
    assert cross.shapes["k"] == (1, 8, L, 64)


# --- hooks ----------------------------------------------------------------------------------------

def _hook_count(module: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


def test_hooks_are_removed_afterwards_and_other_threads_are_not_recorded(translator,
                                                                        seed_trace):
    before = _hook_count(translator.network)
    architecture.residual_streams(translator, seed_trace)
    multihead.heads_of_layer(translator, seed_trace, "decoder.cross", 0)
    qkv.query_key_value(translator, seed_trace, "encoder.self", 0, 0, 0)
    assert _hook_count(translator.network) == before
    module = translator.network.encoder.layers[0].self_attn
    inputs = _inputs(translator, seed_trace)

    def other_session():
        with torch.inference_mode():
            translator.network(**inputs)

    with record([module.hook_q]) as store:
        worker = threading.Thread(target=other_session)
        worker.start()
        worker.join()
        assert store == {}  # another thread's forward pass is not this capture's
    assert _hook_count(translator.network) == before


def test_out_of_range_and_foreign_models_are_refused(translator, seed_trace):
    with pytest.raises(ValueError, match="own-translator or own-random"):
        network.own_network(object())
    with pytest.raises(ValueError, match="layer 3 is out of range"):
        multihead.heads_of_layer(translator, seed_trace, "encoder.self", 3)
    with pytest.raises(ValueError, match="head 4 is out of range"):
        qkv.query_key_value(translator, seed_trace, "encoder.self", 0, 4, 0)
    with pytest.raises(ValueError, match="query 9 is out of range"):
        qkv.query_key_value(translator, seed_trace, "encoder.self", 0, 0, 9)
    with pytest.raises(ValueError, match="not an attention kind"):
        multihead.heads_of_layer(translator, seed_trace, "encoder.cross", 0)


# --- figures --------------------------------------------------------------------------------------

def _diagram(**kwargs):
    return arch_fig.architecture_diagram(3, 3, d_model=128, n_heads=4, d_ff=512, **kwargs)


def test_every_block_of_the_diagram_is_covered_by_its_click_markers():
    fig = _diagram()
    markers = next(t for t in fig.data if t.name == "blocks")
    xs, ys, ids = np.array(markers.x), np.array(markers.y), list(markers.customdata)
    assert set(ids) == set(arch_fig.ALL_TARGETS)
    for block, (cx, bottom, top, _kind, _label) in arch_fig.BLOCKS.items():
        inside = [i for i, b in enumerate(ids) if b == block]
        assert len(inside) >= 6, block
        assert all(abs(xs[i] - cx) < arch_fig.HALF_WIDTH and bottom < ys[i] < top for i in inside)
    # no marker of one block lies inside another block's rectangle
    for i, block in enumerate(ids):
        for other, (cx, bottom, top, _kind, _label) in arch_fig.BLOCKS.items():
            if other != block:
                assert not (abs(xs[i] - cx) < arch_fig.HALF_WIDTH and bottom < ys[i] < top)
    texts = [a.text for a in fig.layout.annotations]
    assert any("128 → 512 → 128" in t for t in texts)
    assert any(t.startswith("3 ×") for t in texts)


def test_the_chosen_blocks_are_outlined_and_hovers_name_the_view_a_click_opens():
    fig = _diagram(selected=("dec_cross", "dec_norm2"), targets={"dec_cross": "Translate"})
    widths = [s.line.width for s in fig.layout.shapes if s.type == "rect"
              and s.line.color == HIGHLIGHT_COLOR]
    assert widths == [4, 4]
    markers = next(t for t in fig.data if t.name == "blocks")
    hover = [h for h, b in zip(markers.hovertext, markers.customdata) if b == "dec_cross"]
    assert "click: Translate" in hover[0]


def test_a_click_event_names_its_block():
    clicked = arch_fig.clicked_block
    assert clicked({"selection": {"points": [{"customdata": "enc_self"}]}}) == "enc_self"
    assert clicked({"selection": {"points": [{"customdata": {"0": "dec_ffn"}}]}}) == \
        "dec_ffn"
    assert clicked({"selection": {"points": [{"customdata": ["output"]}]}}) == "output"
    assert clicked({"selection": {"points": [{"customdata": "nowhere"}]}}) is None
    assert clicked({"selection": {"points": []}}) is None
    assert clicked(None) is None


def test_residual_bars_draw_the_four_sizes_of_each_sublayer():
    sizes = np.array([[10.0, 30.0, 33.0, 11.0], [11.0, 150.0, 155.0, 9.0]])
    fig = arch_fig.residual_sizes(sizes, ["self-attention", "FFN"], d_model=128, chosen=1)
    bars = [trace for trace in fig.data if trace.type == "bar"]
    assert len(bars) == 4
    for part, trace in enumerate(bars):
        np.testing.assert_array_equal(plotly_array(trace.y), sizes[:, part])
    assert fig.layout.shapes[0].y0 == pytest.approx(math.sqrt(128))
    assert fig.layout.xaxis.ticktext == ("self-attention", "<b>FFN</b>")
    with pytest.raises(ValueError):
        arch_fig.residual_sizes(sizes, ["one"], d_model=128)


def test_query_key_bars_grey_the_masked_keys():
    fig = qkv_fig.query_key_bars(["a", "b", "b"], [1.0, -0.5, 2.0], [0.6, 0.4, 0.0],
                            [True, True, False], d_head=32)
    scores, weights = fig.data
    np.testing.assert_array_equal(plotly_array(scores.x), [1.0, -0.5, 2.0])
    assert scores.marker.color[2] == MASK_COLOR and weights.marker.color[2] == MASK_COLOR
    assert fig.layout.yaxis.tickvals == (0, 1, 2)  # the two "b" stay two bars


def test_projection_aligns_x_over_w_and_b_and_the_result_beside_it():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=8), rng.normal(size=(4, 8)), rng.normal(size=4)
    fig = qkv_fig.projection(x, w, b, x @ w.T + b, letter="K")
    shapes = [plotly_array(t.z).shape for t in fig.data]
    assert shapes == [(1, 8), (4, 8), (4, 1), (4, 1)]
    with pytest.raises(ValueError):
        qkv_fig.projection(x, w, b, np.zeros(3), letter="K")


def test_heads_flow_writes_the_real_shapes_and_reveals_stages_in_turn():
    shapes = {"input": (1, 6, 512), "q": (1, 8, 6, 64), "pattern": (1, 8, 6, 6),
              "z": (1, 8, 6, 64), "concat": (1, 6, 512), "output": (1, 6, 512)}
    fig = heads_fig.heads_flow(shapes, 8)
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert "(1, 8, 6, 64)" in texts and "(B, h, L, d_head)" in texts
    assert len([s for s in fig.layout.shapes if s.fillcolor == head_color(7)]) == 3
    fewer = heads_fig.heads_flow(shapes, 8, shown=2)
    assert len(fewer.layout.annotations) < len(fig.layout.annotations)


def test_concat_bars_colour_each_heads_numbers():
    fig = heads_fig.concat_bars(np.arange(8.0), -np.arange(8.0), 4)
    concat, output = fig.data
    assert list(concat.marker.color) == [head_color(i // 2) for i in range(8)]
    np.testing.assert_array_equal(plotly_array(output.y), -np.arange(8.0))


# --- the pages ------------------------------------------------------------------------------------

def _no_exception(at):
    assert not at.exception, at.exception[0].value
    return at


def test_the_architecture_page_shows_the_measured_sizes(translator):
    at = _no_exception(app_test("lesson_architecture", arch_stack="decoder", arch_layer=1,
                                arch_token=3, arch_sublayer="cross_attn"))
    trace = translator.trace(SEED_SENTENCE)
    expected = architecture.residual_streams(translator, trace).layers["decoder", 1].sizes(3)
    np.testing.assert_allclose(at.dataframe[0].value.to_numpy(), expected.round(3), atol=1e-3)
    bars = figures(at)[1]
    np.testing.assert_allclose(plotly_array(bars["data"][3]["y"]), expected[:, 3], atol=1e-6)
    text = " ".join(m.value for m in at.markdown)
    assert f"{expected[1, 0]:.2f}" in text and f"{expected[1, 3]:.2f}" in text
    assert "(1, 6, 128) → (1, 6, 512) → (1, 6, 128)" in text


def test_the_architecture_page_measures_the_seeds_ffn_on_own_random():
    at = _no_exception(app_test("lesson_architecture", arch_model="own-random"))
    text = " ".join(m.value for m in at.markdown)
    assert "(1, 6, 512) → (1, 6, 2048) → (1, 6, 512)" in text  # §3.5: FFN 512→2048→512
    diagram = figures(at)[0]
    assert any("512 → 2048 → 512" in a["text"] for a in diagram["layout"]["annotations"])
    assert any(a["text"].startswith("6 ×") for a in diagram["layout"]["annotations"])


def test_a_block_chosen_by_a_click_opens_its_view():
    """What a click leaves in session state (the chart's callback) switches the page."""
    at = app_test("lesson_architecture")
    at.session_state["open_head"] = ("encoder.self", 1, 0)
    at.session_state["_arch_go"] = "app_pages/views/explore.py"
    at.run()
    _no_exception(at)
    assert at.selectbox(key="kind").value == "encoder.self"
    assert at.selectbox(key="layer").value == 1


def test_the_qkv_page_shows_the_models_own_scores(translator):
    at = _no_exception(app_test("lesson_qkv", qkv_kind="decoder.cross", qkv_layer=2,
                                qkv_head=1, qkv_query=3, qkv_step=99))  # every step shown
    trace = translator.trace(SEED_SENTENCE)
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == list(trace.source_tokens)
    scores = trace.scores("decoder.cross", 2, 1)[3]
    np.testing.assert_allclose(table.iloc[:, 2].to_numpy(), scores, atol=1e-3)
    np.testing.assert_allclose(table.iloc[:, 3].to_numpy(), scores, atol=1e-3)
    bars = figures(at)[-1]
    np.testing.assert_allclose(plotly_array(bars["data"][1]["x"]),
                               trace.weights("decoder.cross", 2, 1)[3], atol=1e-5)


@pytest.mark.parametrize("present", [True, False])
def test_the_qkv_page_starts_at_its_first_step(present):
    at = _no_exception(app_test("lesson_qkv", present=present))
    assert at.slider(key="qkv_step").value == 1
    assert len(figures(at)) == 1 and not at.dataframe
    at.button(key="qkv_step_next").click().run()
    assert len(figures(at)) == 2


def test_the_multihead_page_shows_the_seeds_shapes_on_own_random():
    at = _no_exception(app_test("lesson_multihead", mh_model="own-random", mh_step=99))
    table = at.dataframe[0].value
    shown = list(table.iloc[:, 2])
    assert shown[:2] == ["(1, 6, 512)", "(1, 8, 6, 64)"]  # §3.5: (B, L, 512) → (B, 8, L, 64)
    assert shown[-1] == "(1, 6, 512)"
    grid = figures(at)[1]
    assert len([t for t in grid["data"] if t.get("name") == "weights"]) == 8


STALE = [("lesson_architecture", {"arch_model": "minilm", "arch_stack": "nowhere",
                                  "arch_layer": 9, "arch_token": 40, "arch_sublayer": "x",
                                  "arch_text": 5, "arch_diagram": "x",
                                  "_arch_go": "app_pages/nowhere.py"}),
         ("lesson_qkv", {"qkv_model": None, "qkv_kind": "encoder.cross", "qkv_layer": -1,
                         "qkv_head": 11, "qkv_query": 99, "qkv_proj": "W", "qkv_step": 9,
                         "qkv_text": ["x"]}),
         ("lesson_multihead", {"mh_model": "smollm2", "mh_kind": 3, "mh_layer": 7,
                               "mh_query": "a", "mh_step": 0, "mh_text": 1.5})]


@pytest.mark.parametrize("page, state", STALE)
def test_the_pages_survive_any_remembered_value(page, state):
    at = app_test("shapes", model_choice="own-random")
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page(script(page)).run()
    _no_exception(at)
    assert at.get("plotly_chart")


def test_an_unknown_word_is_explained_not_raised():
    at = _no_exception(app_test("lesson_qkv", qkv_text="The cat sat on the zebra"))
    assert "zebra" in " ".join(e.value for e in at.error)


@pytest.mark.parametrize("page", ["lesson_architecture", "lesson_qkv", "lesson_multihead"])
def test_the_pages_speak_chinese(page):
    i18n.missing().clear()
    with i18n.use("zh"):
        at = _no_exception(app_test(page, lang="zh"))
    assert not i18n.missing(), sorted(i18n.missing())[:5]
    headings = [h.value for h in at.subheader]
    assert headings and all(re.search(r"[\u4e00-\u9fff]", h) for h in headings), headings
    assert re.search("注意力|查询|编码器", " ".join(m.value for m in at.markdown))


# --- Chromium: a click on the diagram -----------------------------------------------------------

# The diagram's plot; then where a block of it is on the screen, from Plotly's own axes.
DIAGRAM_JS = """[...document.querySelectorAll('.js-plotly-plot')]
  .find(p => p.data && p.data.some(t => t.name === 'blocks'))"""
BLOCK_JS = """
([x, y]) => {
  const plot = """ + DIAGRAM_JS + """;
  const box = plot.getBoundingClientRect(), layout = plot._fullLayout;
  return [box.left + layout._size.l + layout.xaxis.l2p(x),
          box.top + layout._size.t + layout.yaxis.l2p(y)];
}
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
@pytest.mark.parametrize("block, title, expected_url", [
    ("enc_self", "Explore attention", "kind=encoder.self"),
    ("dec_self", "Causal mask", "kind=decoder.self"),
    ("dec_norm2", "3.2 The architecture", "")])
def test_clicking_a_block_of_the_diagram_opens_its_view(block, title, expected_url):
    from tests.helpers import STEADY_JS, chromium_page, click_for_run, served_app, settled

    cx, bottom, top, _kind, _label = arch_fig.BLOCKS[block]
    with served_app() as url, chromium_page(1920, 1080) as page:
        page.goto(f"{url}/lesson_architecture", wait_until="networkidle")
        settled(page)  # the run over and every chart drawn, the diagram among them
        diagram = page.wait_for_function(f"() => {DIAGRAM_JS}", timeout=120_000).as_element()
        diagram.evaluate(STEADY_JS)  # into view at once, and until it stays put

        def click():  # off the block's centre: anywhere on a block opens it
            x, y = page.evaluate(BLOCK_JS, [cx + 0.6 * arch_fig.HALF_WIDTH,
                                            (bottom + top) / 2 + 0.3])
            page.mouse.move(x, y)
            page.mouse.click(x, y)

        click_for_run(page, click)  # a click that did not take is tried again
        assert page.locator("h1").first.inner_text().strip() == title
        assert expected_url in page.url
        if block == "dec_norm2":  # an Add & Norm block chooses the sizes on the page
            shown = page.locator("[data-testid='stMain']").inner_text()
            assert "cross-attention at decoder layer" in shown
