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


def _pool_direct(w: np.ndarray, f: int) -> np.ndarray:
    """Blocks of ``f`` tokens a side in plain loops: a block's rows averaged, its keys summed."""
    n_q, n_k = w.shape
    return np.array([[w[i:i + f, j:j + f].sum(-1).mean() for j in range(0, n_k, f)]
                     for i in range(0, n_q, f)])


def test_a_rollout_is_pooled_again_to_what_a_heatmap_draws():
    from viz.rollout import blocks_peak, drawn_rollout
    from viz.sizes import HEAD_SIDE

    rng = np.random.default_rng(0)
    flow = rng.random((300, 300))
    flow /= flow.sum(-1, keepdims=True)
    exact = drawn_rollout(flow[:200, :200], 200, zmax=0.3)  # fits: drawn token by token
    assert exact.factor == 1 and exact.zmax == 0.3 and exact.weights.shape == (200, 200)
    drawn = drawn_rollout(flow, 300, zmax=0.3)
    assert HEAD_SIDE == 256 and drawn.factor == 2  # 300 tokens: blocks of 2
    np.testing.assert_allclose(drawn.weights, _pool_direct(flow, 2), atol=1e-12)
    assert drawn.zmax == blocks_peak(drawn.weights, 300, 2)  # fitted again to the blocks
    assert drawn_rollout(flow, 300).zmax == 1.0  # a ceiling of 1 stays 1
    # a long input's rollout in blocks of 3, its first block left out
    blocks = drawn_rollout(flow[:, 1:], 900, factor=3, first_key=3, zmax=0.5, max_side=100)
    assert blocks.factor == 9
    np.testing.assert_allclose(blocks.weights, _pool_direct(flow[:, 1:], 3), atol=1e-12)
    assert blocks.zmax == blocks_peak(blocks.weights, 900, 9, 3)


def test_the_drawn_blocks_peak_skips_each_tokens_own_block():
    from viz.rollout import blocks_peak

    drawn = np.array([[0.9, 0.2], [0.3, 0.8]])  # blocks of 2: own cells on the diagonal
    assert blocks_peak(drawn, 4, 2) == 0.3
    assert blocks_peak(drawn, 4, 2, first_key=1) == 0.2  # token 2's own key is in block 0
    rng = np.random.default_rng(2)
    drawn, n, step = rng.random((5, 5)), 10, 2
    own = {(t // step, t // step) for t in range(n)}
    direct = max(drawn[i, j] for i in range(5) for j in range(5) if (i, j) not in own)
    assert blocks_peak(drawn, n, step) == pytest.approx(direct)


def test_a_rollout_heatmap_is_the_attention_heatmap_of_what_is_drawn():
    from viz.rollout import DrawnRollout

    tokens = [f"t{i}" for i in range(6)]
    w = np.tril(np.ones((6, 6)))
    w /= w.sum(-1, keepdims=True)
    allowed = np.tril(np.ones((6, 6), bool))
    fig = viz.rollout_heatmap(DrawnRollout(w, 1, 0.5), tokens, tokens, allowed=allowed,
                              title="t", special=([0], [0]))
    direct = viz.attention_heatmap(w, tokens, tokens, allowed=allowed, title="t",
                                   special=([0], [0]), zmax=0.5)
    assert fig.to_json() == direct.to_json()
    pooled = _pool_direct(w, 2)
    fig = viz.rollout_heatmap(DrawnRollout(pooled, 2, 0.5), tokens, tokens, allowed=allowed)
    direct = viz.attention_heatmap(pooled, tokens, tokens, allowed=allowed, factors=(2, 2),
                                   zmax=0.5)
    assert fig.to_json() == direct.to_json()


def test_two_heads_difference_is_the_second_minus_the_first():
    from viz.compare import heads_difference, paired_labels

    rng = np.random.default_rng(3)
    a, b = rng.random((3, 4)).astype(np.float32), rng.random((3, 4)).astype(np.float32)
    q, k = (["x", "cat", "y"], ["x", "dog", "y"]), (list("abcd"), list("abce"))
    fig = heads_difference(a, b, q, k, title="B − A", subtitle="s")
    direct = viz.difference_heatmap(b.astype(np.float64) - a, paired_labels(*q),
                                    paired_labels(*k), title="B − A", subtitle="s")
    assert fig.to_json() == direct.to_json()
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), b.astype(np.float64) - a)
    assert list(fig.data[0].customdata[1])[:1] == ["cat → dog → a"]


def test_the_shown_table_leaves_wholly_masked_blocks_empty():
    from viz.pooling import masked_blocks, pool_weights

    w = np.tril(np.ones((5, 5)))
    w /= w.sum(-1, keepdims=True)
    allowed = np.tril(np.ones((5, 5), bool))
    np.testing.assert_array_equal(masked_blocks(w, allowed, (1, 1)), np.where(allowed, w, np.nan))
    pooled = pool_weights(w, 2, 2)
    table = masked_blocks(pooled, allowed, (2, 2))
    expected = pooled.copy()
    expected[0, 1] = expected[0, 2] = expected[1, 2] = np.nan  # no query of the block sees them
    np.testing.assert_array_equal(table, expected)


def test_every_builder_draws_at_the_sizes_of_one_module():
    import importlib
    import inspect

    from viz import compare, heatmap, present, sizes

    model_view = importlib.import_module("viz.model_view")  # viz.model_view is the builder

    def default(function, name):
        return inspect.signature(function).parameters[name].default

    assert default(heatmap.attention_heatmap, "max_side") == sizes.HEAD_SIDE == 256
    assert default(compare.difference_heatmap, "max_side") == sizes.HEAD_SIDE
    assert default(viz.rollout_heatmap, "max_side") == sizes.HEAD_SIDE
    assert default(heatmap.heads_grid, "max_side") == sizes.GRID_SIDE == 64
    assert default(model_view.model_view, "tile") == sizes.TILE_SIDE == 16
    assert default(present.for_projector, "width_px") == sizes.PROJECTOR_CHART_PX == 1760
    assert default(present.for_screen, "width_px") == sizes.SCREEN_CHART_PX == 560


def test_numbers_are_written_as_the_pages_and_lessons_write_them():
    from viz import numbers

    assert numbers.number(0.7) == "0.7" and numbers.number(-3.0) == "-3"
    assert numbers.number(0.30285, 2) == "0.30" and numbers.number(-0.001, 2) == "0.00"
    assert numbers.number(-0.0) == "0"
    assert numbers.significant(3.340228e-05) == "0.000033" and numbers.significant(0.3222) == "0.32"
    assert numbers.significant(2980.96, 4) == "2981"
    assert [numbers.byte_size(n) for n in (0, 1023, 1024, 1536 * 1024, 3 * 2**30, 5 * 2**40)] == [
        "0 B", "1,023 B", "1.0 KB", "1.5 MB", "3.0 GB", "5,120.0 GB"]
    assert numbers.byte_size(3 * 2**30, largest="MB") == "3,072.0 MB"
    assert numbers.byte_size(2047, largest="MB") == "2.0 KB"
    assert [numbers.rough_size(n) for n in (10, 51 * 2**20, 1.5 * 2**30)] == [
        "1 MB", "51 MB", "1.5 GB"]
    assert numbers.thousands(12288) == "12,288" and numbers.thousands("all") == "all"
    assert numbers.count(999_999) == "999,999" and numbers.count(1_340_000_000) == "1.34 × 10⁹"
    assert numbers.count(10**6) == "1.00 × 10⁶"
    assert numbers.tiny(0) == "0" and numbers.tiny(6e-8) == "6.0 × 10⁻⁸"
    assert numbers.tiny(-1.25e-12) == "-1.2 × 10⁻¹²" and numbers.tiny(3e5) == "3.0 × 10⁵"
    assert [numbers.exponential(x) for x in (0, 2980.96, 0.0498, 7.389, 1.2e7, 0.004)] == [
        "0.00e+00", "2981", "0.05", "7.39", "1.20e+07", "4.00e-03"]
