"""The model view, head view, causal mask, positional, head statistics and complexity figures,
read on fig.data / fig.layout: values drawn are the trace's."""

from __future__ import annotations

import numpy as np
import pytest

import viz
from model.analysis.positions import rope_offset_scores, sinusoidal
from model.analysis.statistics import head_stats


def _z(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def test_model_view_tiles_hold_every_heads_weights(seed_trace):
    fig = viz.model_view(seed_trace, "decoder.cross")
    assert len(fig.data) == 2  # the heatmap, and invisible markers that take clicks
    targets = np.asarray(fig.data[1].customdata)
    assert len(targets) == 6 * 8 and tuple(targets[9]) == (1, 1)
    z, custom = _z(fig.data[0]), np.asarray(fig.data[0].customdata)
    tq, tk = 7, 6  # 7 target and 6 source tokens fit a tile unpooled
    for layer in (0, 5):
        for head in (0, 7):
            r, c = layer * (tq + 1), head * (tk + 1)
            np.testing.assert_allclose(z[r:r + tq, c:c + tk],
                                       seed_trace.weights("decoder.cross", layer, head),
                                       atol=1e-7)
            assert tuple(custom[r, c]) == (layer, head)
    assert list(fig.layout.xaxis.ticktext) == [f"H{h}" for h in range(8)]
    assert list(fig.layout.yaxis.ticktext) == [f"L{layer}" for layer in range(6)]
    assert np.isnan(z[tq, 0])  # the gap between layers


def test_model_view_of_a_long_input_pools_each_tile(seed_trace):
    from model import AttentionTrace

    n = 100
    w = np.tril(np.ones((n, n)))
    w /= w.sum(-1, keepdims=True)
    trace = AttentionTrace(model="m", family="decoder-only",
                           attention={"decoder.self": np.stack([np.stack([w] * 3)] * 2)},
                           n_heads=3, n_kv_heads=3, tokens=[str(i) for i in range(n)],
                           ids=range(n))
    z = _z(viz.model_view(trace, "decoder.self", tile=10).data[0])
    assert z.shape == (2 * 11, 3 * 11)
    np.testing.assert_allclose(np.nansum(z[:10, :10], axis=1), 1.0, atol=1e-9)


def test_head_view_draws_lines_per_head_with_weight_as_opacity(seed_trace):
    layer = seed_trace.layer_weights("encoder.self", 1)
    tokens = list(seed_trace.source_tokens)
    fig = viz.head_view(layer, tokens, tokens, heads=[0, 3], min_weight=0.0)
    lines = [t for t in fig.data if t.mode == "lines" and "weight" in t.meta]
    assert {t.meta["head"] for t in lines} == {0, 3}
    for t in lines:  # every segment of a trace has a weight in that trace's level
        h, level = t.meta["head"], t.meta["weight"]
        xs, ys = list(t.x), list(t.y)
        for i in range(0, len(xs), 3):
            q, k = int(ys[i]), int(round(ys[i + 1]))
            assert min(int(layer[h, q, k] * 8), 7) == level
    assert sum(len(t.x) // 3 for t in lines) == 2 * 36
    columns = [t for t in fig.data if t.mode == "markers+text"]
    assert list(columns[0].text) == tokens and list(columns[1].text) == tokens


def test_head_view_focus_keeps_one_querys_lines_and_cross_attention_uses_two_columns(seed_trace):
    layer = seed_trace.layer_weights("decoder.cross", 5)
    fig = viz.head_view(layer, list(seed_trace.target_tokens), list(seed_trace.source_tokens),
                        heads=[1], focus=2, min_weight=0.0)
    lines = [t for t in fig.data if t.mode == "lines" and "weight" in t.meta]
    assert all(y == 2 for t in lines for y in list(t.y)[0::3])
    assert sum(len(t.x) // 3 for t in lines) == 6
    with pytest.raises(ValueError, match="head 9 is out of range"):
        viz.head_view(layer, list(seed_trace.target_tokens), list(seed_trace.source_tokens),
                      heads=[9])


def test_mask_view_panels_hold_scores_mask_minus_infinity_and_weights(seed_trace):
    name, layer, head = "decoder.self", 2, 4
    q, k = seed_trace.axes(name)
    scores = seed_trace.scores(name, layer, head)
    allowed = seed_trace.mask(name, layer)
    weights = seed_trace.weights(name, layer, head)
    fig = viz.mask_view(scores, allowed, weights, q, k)
    raw, mask, masked, neg_inf, softmax, masked_weights = fig.data
    np.testing.assert_allclose(_z(raw), scores, atol=1e-6)
    np.testing.assert_array_equal(_z(mask), allowed.astype(float))
    assert np.isnan(_z(masked)[~allowed]).all()
    np.testing.assert_allclose(_z(masked)[allowed], scores[allowed], atol=1e-6)
    assert (_z(neg_inf)[~allowed] == 1).all() and neg_inf.name == "−∞"
    np.testing.assert_allclose(_z(softmax)[allowed], weights[allowed], atol=1e-7)
    # the softmax panel draws forbidden cells grey, apart from a zero weight's white
    assert np.isnan(_z(softmax)[~allowed]).all()
    assert (_z(masked_weights)[~allowed] == 1).all() and np.isnan(_z(masked_weights)[allowed]).all()
    assert sum(a.text == "−∞" for a in fig.layout.annotations) == (~allowed).sum()
    assert list(fig.layout.xaxis.ticktext) == ["&lt;bos&gt;", *k[1:]]
    with pytest.raises(ValueError, match="does not match"):
        viz.mask_view(scores, allowed[:-1], weights, q, k)


def test_positional_views_draw_the_tables_values():
    table = sinusoidal(40, 32)
    np.testing.assert_allclose(_z(viz.sinusoidal_heatmap(table).data[0]), table)
    waves = viz.clock_hands(table, dims=[0, 30])
    np.testing.assert_allclose(waves.data[1].y, table[:, 30])
    with pytest.raises(ValueError, match="out of range"):
        viz.clock_hands(table, dims=[32])
    scores = rope_offset_scores(10)
    np.testing.assert_allclose(_z(viz.rope_offsets(scores).data[0]), scores)
    circles = viz.rope_circles([1.0, 0.1], n_positions=5)
    np.testing.assert_allclose(circles.data[1].x, np.cos(np.arange(5) * 1.0))
    with pytest.raises(ValueError, match="square"):
        viz.similarity_matrix(np.ones((2, 3)), "x")


def test_stats_heatmap_draws_each_heads_metric(seed_trace):
    stats = head_stats(seed_trace, "encoder.self")
    fig = viz.stats_heatmap(stats["entropy"], "entropy")
    np.testing.assert_allclose(_z(fig.data[0]), stats["entropy"])
    assert tuple(np.asarray(fig.data[0].customdata)[3, 5]) == (3, 5)


def test_complexity_curves_cross_at_n_equals_d():
    fig = viz.complexity_curves(64, n_current=10)
    attention, rnn = fig.data
    n = np.asarray(attention.x)
    np.testing.assert_allclose(attention.y, n.astype(float) ** 2 * 64)
    np.testing.assert_allclose(rnn.y, n * 64.0 ** 2)
    assert ((np.asarray(attention.y) < np.asarray(rnn.y)) == (n < 64)).all()
    with pytest.raises(ValueError):
        viz.complexity_curves(0, 5)


def test_complexity_marks_sit_at_their_n_on_the_log_axis():
    # an annotation on a log axis is placed at log10(n); at n it stretched the axis to 10^128
    fig = viz.complexity_curves(128, n_current=6)
    assert sorted(a.x for a in fig.layout.annotations) == pytest.approx(
        sorted([np.log10(128), np.log10(6)]))
    assert sorted(shape.x0 for shape in fig.layout.shapes) == [6, 128]
    n_max = max(fig.data[0].x)
    assert all(a.x <= np.log10(n_max) for a in fig.layout.annotations)


def test_head_view_legend_names_every_head_in_its_colour_even_when_weights_are_low():
    from viz.style import head_color, head_dash

    n = 40
    uniform = np.full((10, n, n), 1 / n)  # no weight reaches the darker levels
    tokens = [f"t{i}" for i in range(n)]
    fig = viz.head_view(uniform, tokens, tokens, heads=[0, 3, 9])
    legend = [t for t in fig.data if t.showlegend is not False and t.mode == "lines"]
    assert [t.name for t in legend] == ["head 0", "head 3", "head 9"]
    for t in legend:
        h = t.meta["head"]
        assert t.line.color == head_color(h) and t.line.dash == head_dash(h)
    assert head_dash(9) != head_dash(1) and head_color(9) == head_color(1)
    lines = [t for t in fig.data if t.mode == "lines" and "weight" in t.meta]
    assert lines and all(t.showlegend is False for t in lines)


def test_head_view_height_is_bounded_and_crowded_labels_thinned():
    n = 80
    w = np.full((1, n, n), 1 / n)
    tokens = [f"t{i}" for i in range(n)]
    fig = viz.head_view(w, tokens, tokens, heads=[0])
    assert fig.layout.height <= 900
    left = [t for t in fig.data if t.mode == "markers+text"][0]
    shown = [label for label in left.text if label]
    assert 20 <= len(shown) < n  # thinned, not gone
    assert list(left.hovertext) == [f"{i}: {t}" for i, t in enumerate(tokens)]  # all named
    small = viz.head_view(w[:, :6, :6], tokens[:6], tokens[:6], heads=[0])
    assert list([t for t in small.data if t.mode == "markers+text"][0].text) == tokens[:6]


def test_tokens_made_of_whitespace_are_drawn_visibly():
    fig = viz.attention_heatmap(np.full((3, 3), 1 / 3), ["a", " ", ""], ["a", "  ", " b"])
    assert list(fig.layout.yaxis.ticktext) == ["a", "␣", "∅"]
    assert list(fig.layout.xaxis.ticktext) == ["a", "␣␣", " b"]
    other = viz.attention_heatmap(np.full((2, 2), 0.5), ["\u3000", "\xa0 "], ["a", "b"])
    assert list(other.layout.yaxis.ticktext) == ["␣", "␣␣"]  # ideographic, no-break spaces
