"""Rollout, head statistics and spans against direct computations and hand-built heads; what
the pages draw (a layer, a window, a generation step) against the trace."""

from __future__ import annotations

import numpy as np
import pytest

import viz
from model import AttentionTrace, load
from model.analysis.cuts import (
    colour_ceiling,
    generation_step,
    mask_panels,
    window,
    window_weights,
)
from model.analysis.rollout import rollout
from model.analysis.statistics import aggregate, head_stats, span_attention

N = 6


def _trace(*heads: np.ndarray, layers: int = 1) -> AttentionTrace:
    stack = np.stack([np.stack(heads)] * layers).astype(np.float32)  # [layer, head, q, k]
    return AttentionTrace(model="hand", family="decoder-only", attention={"decoder.self": stack},
                          n_heads=len(heads), n_kv_heads=len(heads),
                          tokens=[f"t{i}" for i in range(N)], ids=range(N))


def previous_token_head() -> np.ndarray:
    w = np.zeros((N, N))
    w[0, 0] = 1
    w[np.arange(1, N), np.arange(N - 1)] = 1
    return w


def first_token_head() -> np.ndarray:
    w = np.zeros((N, N))
    w[:, 0] = 1
    return w


def uniform_causal_head() -> np.ndarray:
    w = np.tril(np.ones((N, N)))
    return w / w.sum(-1, keepdims=True)


def test_statistics_take_their_extreme_values_on_hand_built_heads():
    stats = head_stats(_trace(previous_token_head(), first_token_head(), uniform_causal_head()),
                       "decoder.self")
    prev, first, uniform = 0, 1, 2
    assert stats["previous_token"][0, prev] == pytest.approx(1.0)
    assert stats["entropy"][0, prev] == pytest.approx(0.0)
    assert stats["distance"][0, prev] == pytest.approx((N - 1) / N)  # 1 for all but the first
    assert stats["first_token"][0, first] == pytest.approx(1.0)
    assert stats["entropy"][0, first] == pytest.approx(0.0)
    assert stats["distance"][0, first] == pytest.approx(np.arange(N).mean())
    assert stats["self"][0, first] == pytest.approx(1 / N)
    expected_entropy = np.mean([np.log(i + 1) for i in range(N)])
    assert stats["entropy"][0, uniform] == pytest.approx(expected_entropy)
    assert stats["entropy"][0, uniform] == stats["entropy"].max()  # the most spread-out head
    assert stats["previous_token"][0, first] < stats["previous_token"][0, prev]


def test_rollout_equals_the_formula_computed_directly():
    rng = np.random.default_rng(0)
    layers = []
    for _ in range(3):
        heads = np.tril(rng.random((2, N, N)))
        layers.append(heads / heads.sum(-1, keepdims=True))
    stack = np.stack(layers).astype(np.float32)
    trace = AttentionTrace(model="r", family="decoder-only", attention={"decoder.self": stack},
                           n_heads=2, n_kv_heads=2, tokens=list("abcdef"), ids=range(N))
    expected = np.eye(N)
    for layer in range(3):
        a = 0.5 * stack[layer].astype(np.float64).mean(0) + 0.5 * np.eye(N)
        a = a / a.sum(-1, keepdims=True)
        expected = a @ expected
    result = rollout(trace, "decoder.self")
    np.testing.assert_allclose(result[-1], expected, atol=1e-6)
    np.testing.assert_allclose(result[-1].sum(-1), 1.0, atol=1e-9)
    with pytest.raises(ValueError, match="cross-attention"):
        rollout(trace, "decoder.cross")


def test_aggregate_and_span_attention(seed_trace):
    mean = aggregate(seed_trace, "encoder.self", layers=[0, 1], heads=[2, 3])
    direct = np.mean([seed_trace.weights("encoder.self", i, h) for i in (0, 1) for h in (2, 3)],
                     axis=0)
    np.testing.assert_allclose(mean, direct, atol=1e-7)
    block, mass = span_attention(mean, (3, 6), (0, 3))  # "on the mat" -> "The cat sat"
    assert block.shape == (3, 3)
    assert mass == pytest.approx(mean[3:6, 0:3].sum(-1).mean())
    with pytest.raises(ValueError, match="do not fit"):
        span_attention(mean, (0, 7), (0, 1))
    with pytest.raises(ValueError, match="at least one"):
        aggregate(seed_trace, "encoder.self", layers=[], heads=[0])


def test_a_layers_colour_ceiling_is_fitted_to_its_largest_weight_away_from_the_first_token(
        seed_trace):
    from model.reading.blocks import layer_summary

    weights = seed_trace.layer_weights("decoder.self", 2)
    peak = layer_summary(seed_trace, "decoder.self", 2, tile=16, grid=64, mean_side=1024).peak
    # fitted to the largest weight away from the first token: a causal first row is all 1
    assert peak == pytest.approx(float(weights[:, 1:, 1:].max()))
    zmax, fitted = colour_ceiling(peak, weights.shape[-1], fit=True)
    assert fitted and zmax == pytest.approx(peak) and zmax < weights.max() == pytest.approx(1.0)
    assert colour_ceiling(peak, weights.shape[-1]) == (1.0, False)  # a short input: 0 to 1
    assert colour_ceiling(peak, 33) == (pytest.approx(peak), True)  # a long one is fitted
    assert colour_ceiling(0.0, 99, fit=True)[0] == 1e-6  # never a zero range


def test_windows_cut_queries_and_self_keys_but_keep_every_source_key(seed_trace):
    own = window(seed_trace, "encoder.self", 2, 5)
    assert own.query_tokens == own.key_tokens == ["sat", "on", "the"]
    assert own.query_labels == ["2: sat", "3: on", "4: the"]
    # decoder rows are named by the word they write: row 2 reads "cat" and writes "sat"
    own = window(seed_trace, "decoder.self", 2, 5)
    assert own.key_tokens == ["cat", "sat", "on"] and own.query_tokens == ["sat", "on", "the"]
    assert own.query_labels[0] == "2: writes sat (reads cat)"
    np.testing.assert_array_equal(window_weights(seed_trace, "decoder.self", 1, own),
                                  seed_trace.layer_weights("decoder.self", 1)[:, 2:5, 2:5])
    panels = mask_panels(seed_trace, "decoder.self", 1, 3, own)
    np.testing.assert_array_equal(panels.scores, seed_trace.scores("decoder.self", 1, 3)[2:5, 2:5])
    np.testing.assert_array_equal(panels.allowed, np.tril(np.ones((3, 3), bool)))
    cross = window(seed_trace, "decoder.cross", 2, 5)
    assert cross.query_tokens == ["sat", "on", "the"]
    assert cross.key_tokens == list(seed_trace.source_tokens)


def test_a_generation_step_is_what_the_decoder_saw_and_chose():
    trace = load("own-translator", device="cpu").trace("The cat sat on the mat")
    last = trace.layers("decoder.cross") - 1
    step = generation_step(trace, 4, last)
    assert step.chosen == "垫子" and step.so_far == ["猫", "坐", "在"]
    assert step.self_weights.shape == (4, 4) and step.self_keys[0] == "<bos>"
    assert step.rows.labels[:4] == ["猫", "坐", "在", "垫子"]  # rows: the word each writes
    np.testing.assert_allclose(step.cross_row, trace.mean_weights("decoder.cross", last)[3])
    assert step.source_tokens[step.cross_peak] == "mat"
    assert step.top_words[step.top_chosen] == "垫子"
    assert step.rows.hover[3] == "3: writes 垫子 (reads 在)"
    one_head = generation_step(trace, 4, last, head=1)
    np.testing.assert_allclose(one_head.cross_row, trace.weights("decoder.cross", last, 1)[3])
    with pytest.raises(ValueError, match="step 7 is out of range 1..6"):
        generation_step(trace, 7, last)


def test_a_windows_hovers_count_positions_in_the_whole_input_on_both_axes(seed_trace):
    shown = window(seed_trace, "encoder.self", 3, 5)
    assert shown.query_labels == ["3: on", "4: the"] and shown.key_labels == ["3: on", "4: the"]
    fig = viz.mask_view(*(np.full((2, 2), 0.5),) * 3, shown.query_tokens, shown.key_tokens,
                        query_hover=shown.query_labels, key_hover=shown.key_labels)
    assert tuple(fig.data[0].customdata[1, 0]) == ("4: the", "3: on")


def _blocks_any(allowed: np.ndarray, f: int) -> np.ndarray:
    """A mask pooled by ``f`` tokens a side, in plain numpy: a block is allowed if any cell is."""
    n_q, n_k = allowed.shape
    return np.array([[allowed[i:i + f, j:j + f].any() for j in range(0, n_k, f)]
                     for i in range(0, n_q, f)])


@pytest.mark.parametrize("first", ["auto", "keep", "leave out"])
def test_a_rollout_in_blocks_is_cut_per_block_and_keeps_its_tokens_per_token(first):
    from model.analysis.rollout import rollout_view

    rng = np.random.default_rng(1)
    n, factor = 40, 3
    blocks = -(-n // factor)
    flow = rng.random((blocks, blocks)) + np.eye(blocks) * 5
    flow[:, 0] += 20 if first == "auto" else 0  # a dominant first block: left out by auto
    flow /= flow.sum(-1, keepdims=True)
    allowed = np.tril(np.ones((n, n), bool))
    tokens = [f"t{i}" for i in range(n)]
    view = rollout_view(flow, allowed, tokens, [0, 5], first=first, factor=factor)
    share = flow[:, 0].mean()
    assert view.sink_share == pytest.approx(share) and view.factor == factor
    assert view.left_out == (first != "keep")
    cut = factor if view.left_out else 0
    assert view.first_key == cut and view.key_tokens == tokens[cut:]
    assert view.key_special == []  # block labels name ranges, not tokens
    np.testing.assert_array_equal(view.allowed, allowed[:, cut:])
    expected = flow[:, 1:] / flow[:, 1:].sum(-1, keepdims=True) if view.left_out else flow
    np.testing.assert_allclose(view.flow, expected, atol=1e-12)
    assert view.zmax == 1.0  # 14 blocks: not past FIT_ABOVE keys
    q, k = np.indices(expected.shape)
    fitted = rollout_view(flow, allowed, tokens, [0], first=first, factor=factor, fit_above=4)
    offset = 1 if view.left_out else 0
    assert fitted.zmax == pytest.approx(expected[q != k + offset].max())
    # the same call as the page made before it had the factor: the pooled mask and labels
    old = rollout_view(flow, _blocks_any(allowed, factor), tokens[::factor], [], first=first)
    assert (old.left_out, old.zmax, old.sink_share) == (view.left_out, view.zmax,
                                                         view.sink_share)
    np.testing.assert_array_equal(old.flow, view.flow)


def test_one_token_per_block_is_the_rollout_view_as_before():
    from model.analysis.rollout import rollout_view

    sink = np.array([[1.0, 0.0, 0.0], [0.8, 0.2, 0.0], [0.9, 0.05, 0.05]])
    allowed = np.tril(np.ones((3, 3), bool))
    view = rollout_view(sink, allowed, ["<s>", "a", "b"], [0, 2])
    assert view.factor == 1 and view.first_key == 1 and view.key_special == [1]
    np.testing.assert_array_equal(view.allowed, allowed[:, 1:])


def test_compared_heads_share_one_ceiling_read_only_when_fitted(seed_trace):
    from model.analysis.cuts import FIT_ABOVE, shared_ceiling

    asked = []

    def peaks():
        asked.append(True)
        return [0.2, 0.4]

    assert len(seed_trace.axes("decoder.self")[1]) <= FIT_ABOVE
    assert shared_ceiling([seed_trace, seed_trace], "decoder.self", peaks) == (1.0, False)
    assert not asked  # a short input: no layer is read
    n = FIT_ABOVE + 1
    w = np.full((1, 1, n, n), 1 / n, np.float32)
    long = AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": w},
                          n_heads=1, n_kv_heads=1, tokens=[str(i) for i in range(n)],
                          ids=range(n))
    assert shared_ceiling([seed_trace, long], "encoder.self", peaks) == (0.4, True)
    assert shared_ceiling([long], "encoder.self", lambda: [0.0]) == (1e-6, True)


def test_stage_weights_stack_one_head_or_the_heads_mean_of_each_trace(seed_trace):
    from model.analysis.cuts import stage_weights

    traces = [seed_trace, seed_trace]
    mean = stage_weights(traces, "decoder.cross", 5, None)
    direct = seed_trace.layer_weights("decoder.cross", 5).astype(np.float32).mean(0)
    assert mean.shape == (2, *direct.shape) and mean.dtype == np.float32
    np.testing.assert_allclose(mean[1], direct, atol=1e-7)
    head = stage_weights(traces, "decoder.cross", 5, 3)
    np.testing.assert_array_equal(head[0], seed_trace.weights("decoder.cross", 5, 3))


def test_statistics_and_rollout_do_not_depend_on_the_sizes_drawn(seed_trace):
    from model.analysis.statistics import layer_summaries, summary_of

    with pytest.raises(TypeError):
        summary_of(seed_trace, "encoder.self", 0)  # the app says what its views draw
    drawn = layer_summaries(seed_trace, "encoder.self", tile=16, grid=64)
    small = layer_summaries(seed_trace, "encoder.self", tile=1, grid=1)
    n = len(seed_trace.axes("encoder.self")[0])
    assert drawn[0].tiles.shape[1:] == (n, n) and small[0].tiles.shape[1:] == (1, 1)
    for key, values in head_stats(seed_trace, "encoder.self").items():
        np.testing.assert_array_equal(values, head_stats(seed_trace, "encoder.self",
                                                         drawn)[key])
    np.testing.assert_array_equal(rollout(seed_trace, "encoder.self"),
                                  rollout(seed_trace, "encoder.self", summaries=drawn))


def test_the_positions_page_draws_the_dimensions_and_pairs_it_names():
    from model.analysis.positions import clock_dims, rope_thetas, rope_thetas_shown

    assert clock_dims(128) == [0, 2, 32, 64, 126] and clock_dims(16) == [0, 2, 4, 8, 14]
    thetas = rope_thetas(64)
    np.testing.assert_array_equal(rope_thetas_shown(), thetas[[0, 4, 12, 31]])
    assert rope_thetas_shown()[0] == 1.0  # the fastest pair turns a radian per position
    np.testing.assert_allclose(rope_thetas_shown(), 10000.0 ** (-np.array([0, 8, 24, 62]) / 64))


def test_a_region_window_is_any_stretch_of_queries_by_any_stretch_of_keys(seed_trace):
    from model.analysis.cuts import query_rows, region_window, window, window_mask

    name = "decoder.self"
    rows, k_tokens = query_rows(seed_trace, name), seed_trace.axes(name)[1]
    zoom = region_window(seed_trace, name, range(2, 5), range(1, 3))
    assert zoom.query_tokens == rows.labels[2:5] and zoom.query_labels == rows.hover[2:5]
    assert zoom.key_tokens == list(k_tokens[1:3])
    assert zoom.key_labels == [f"{j}: {t}" for j, t in enumerate(k_tokens[1:3], start=1)]
    np.testing.assert_array_equal(window_mask(seed_trace, name, 2, zoom),
                                  seed_trace.mask(name, 2)[2:5, 1:3])
    same = window(seed_trace, name, 2, 5)
    assert same == region_window(seed_trace, name, range(2, 5), range(2, 5))
