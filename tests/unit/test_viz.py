"""Figure builders: the values drawn are the trace's, labels distinct, masks visible."""

from __future__ import annotations

import numpy as np
import pytest

import viz


def _z(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def test_heatmap_draws_the_heads_weights_with_token_labels(seed_trace):
    q, k = seed_trace.axes("encoder.self")
    w = seed_trace.weights("encoder.self", 2, 5)
    fig = viz.attention_heatmap(w, q, k, allowed=seed_trace.mask("encoder.self"))
    assert len(fig.data) == 1  # nothing masked in encoder self-attention
    np.testing.assert_allclose(_z(fig.data[0]), w, atol=1e-7)
    assert list(fig.layout.xaxis.ticktext) == ["The", "cat", "sat", "on", "the", "mat"]
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4, 5]
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top, as in the seed
    assert fig.layout.coloraxis.colorbar.title.text == "weight"
    assert "weight" in fig.data[0].hovertemplate and "query" in fig.data[0].hovertemplate
    assert tuple(fig.data[0].customdata[1, 4]) == ("1: cat", "4: the")


def test_repeated_tokens_stay_distinct_positions():
    tokens = ["the", "cat", "the", "cat"]
    w = np.full((4, 4), 0.25)
    fig = viz.attention_heatmap(w, tokens, tokens)
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3]
    assert list(fig.layout.xaxis.ticktext) == tokens
    assert np.asarray(fig.data[0].z).shape == (4, 4)


def test_masked_cells_are_drawn_apart_from_zero_weights(seed_trace):
    q, k = seed_trace.axes("decoder.self")
    w = seed_trace.weights("decoder.self", 0, 0)
    allowed = seed_trace.mask("decoder.self")
    fig = viz.attention_heatmap(w, q, k, allowed=allowed)
    weights_z, mask_z = _z(fig.data[0]), _z(fig.data[1])
    assert np.isnan(weights_z[~allowed]).all()
    np.testing.assert_allclose(weights_z[allowed], w[allowed], atol=1e-7)
    assert (mask_z[~allowed] == 1).all() and np.isnan(mask_z[allowed]).all()
    assert fig.data[1].name == "masked" and "masked" in fig.data[1].hovertemplate
    assert list(fig.layout.yaxis.ticktext)[0] == "&lt;bos&gt;"  # escaped, not eaten as HTML


def test_heads_grid_has_one_heatmap_per_head(seed_trace):
    q, k = seed_trace.axes("decoder.cross")
    layer = seed_trace.layer_weights("decoder.cross", 4)
    fig = viz.heads_grid(layer, q, k)
    assert len(fig.data) == 8
    for h in range(8):
        np.testing.assert_allclose(_z(fig.data[h]), layer[h], atol=1e-7)
    assert [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(8)]


def test_builders_reject_weights_that_do_not_match_the_tokens():
    with pytest.raises(ValueError, match="do not match"):
        viz.attention_heatmap(np.ones((2, 3)), ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="3-D"):
        viz.heads_grid(np.ones((2, 2)), ["a", "b"], ["a", "b"])


def test_long_axes_label_a_readable_subset():
    tokens = [f"t{i}" for i in range(300)]
    fig = viz.attention_heatmap(np.full((300, 300), 1 / 300), tokens, tokens, max_side=300)
    assert len(fig.layout.xaxis.tickvals) <= 64
    assert fig.layout.xaxis.ticktext[1] == tokens[fig.layout.xaxis.tickvals[1]]


def test_long_inputs_are_drawn_in_blocks_that_keep_rows_summing_to_one():
    from viz.pooling import pool_weights

    rng = np.random.default_rng(0)
    n = 1000
    w = np.tril(rng.random((n, n)))
    w /= w.sum(-1, keepdims=True)
    tokens = [f"t{i}" for i in range(n)]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    fig = viz.attention_heatmap(w, tokens, tokens, allowed=allowed, max_side=256)
    z = _z(fig.data[0])
    assert z.shape == (250, 250)  # blocks of 4 tokens
    expected = w.reshape(250, 4, 250, 4).sum(axis=3).mean(axis=1)
    finite = ~np.isnan(z)
    np.testing.assert_allclose(z[finite], expected[finite], atol=1e-12)
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-9)
    assert np.isnan(z[0, 1]) and not np.isnan(z[1, 0])  # whole blocks above the diagonal masked
    assert "blocks of 4×4" in fig.layout.title.text
    assert fig.layout.xaxis.ticktext[0] == "0–3: t0…t3"
    assert len(fig.layout.xaxis.ticktext) <= 64
    grid = viz.heads_grid(np.stack([w, w]), tokens, tokens, max_side=64)
    assert _z(grid.data[0]).shape == (63, 63)
    np.testing.assert_allclose(pool_weights(w, 16, 16).sum(-1), 1.0, atol=1e-9)


def test_special_tokens_are_marked_on_the_axes(seed_trace):
    q, k = seed_trace.axes("decoder.cross")
    assert seed_trace.special("decoder.cross") == ([0], [])
    fig = viz.attention_heatmap(seed_trace.weights("decoder.cross", 0, 0), q, k,
                                special=seed_trace.special("decoder.cross"))
    assert fig.layout.yaxis.ticktext[0] == "<span style='color:#8a8a8a'><i>&lt;bos&gt;</i></span>"
    assert fig.layout.yaxis.ticktext[1] == "The"
    assert list(fig.layout.xaxis.ticktext) == ["The", "cat", "sat", "on", "the", "mat"]


def test_colour_scale_can_be_fitted_to_small_weights(seed_trace):
    q, k = seed_trace.axes("encoder.self")
    layer = seed_trace.layer_weights("encoder.self", 0)
    fig = viz.attention_heatmap(layer[0], q, k, zmax=0.25)
    grid = viz.heads_grid(layer, q, k, zmax=0.25)
    assert fig.layout.coloraxis.cmax == 0.25 and grid.layout.coloraxis.cmax == 0.25
    assert viz.attention_heatmap(layer[0], q, k).layout.coloraxis.cmax == 1


def test_a_short_heatmap_is_tall_enough_for_its_axis_title():
    fig = viz.attention_heatmap(np.ones((1, 1)), ["猫"], ["<bos>"],
                                y_title="query: the word being written")
    plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert plot_height >= 7 * len("query: the word being written")
