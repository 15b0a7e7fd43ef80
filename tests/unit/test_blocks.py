"""Heads read in row blocks (model/reading/blocks.py) equal the exact weights, transformers' eager
``output_attentions`` and numpy references: blocked, pooled and summarised."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

from app_pages.frame.navigation import script
from model.hf import HFModel
from model.reading import blocks as blocked
from viz.pooling import pool_weights

TEXT = "A dog slept under the table yesterday because it was tired, and the cat sat on the mat."
TARGET = "猫 坐 在 垫子 上 , 狗 睡 了"
AUTO = {"encoder-only": AutoModel, "decoder-only": AutoModelForCausalLM,
        "encoder-decoder": AutoModelForSeq2SeqLM}
TINY = {"bert": "encoder-only", "gpt2": "decoder-only", "llama": "decoder-only",
        "mistral": "decoder-only", "t5": "encoder-decoder", "bart": "encoder-decoder"}
SMALL = 600  # bytes per block: a few rows at a time, so blocks' edges are crossed


@pytest.fixture(scope="module")
def traced(tiny_checkpoints):
    """Per tiny checkpoint: (trace, transformers' eager attentions per kind)."""
    out = {}
    for name, family in TINY.items():
        model = HFModel.load(str(tiny_checkpoints[name]), device="cpu")
        target = TARGET if family == "encoder-decoder" else None
        trace = model.trace(TEXT, target=target)
        inputs = model.prepare_inputs([TEXT], None if target is None else [target])
        eager = AUTO[family].from_pretrained(model.name, attn_implementation="eager").eval()
        with torch.inference_mode():
            result = eager(**inputs, output_attentions=True, use_cache=False)
        if family == "encoder-decoder":
            reference = {"encoder.self": result.encoder_attentions,
                         "decoder.self": result.decoder_attentions,
                         "decoder.cross": result.cross_attentions}
        else:
            reference = {trace.names[0]: result.attentions}
        out[name] = trace, {kind: torch.stack(layers)[:, 0].numpy()
                            for kind, layers in reference.items()}
    return out


def old_head_stats(trace, name):
    """The numpy statistics the Head statistics page computed head by head before blocks."""
    n_q, n_k = (len(t) for t in trace.axes(name))
    q_pos, k_pos = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
    stats = {key: np.full((trace.layers(name), trace.n_heads), np.nan)
             for key in ("entropy", "distance", "first_token", "previous_token", "self")}
    for layer in range(trace.layers(name)):
        for head in range(trace.n_heads):
            w = trace.weights(name, layer, head).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                plogp = np.where(w > 0, w * np.log(w), 0.0)
            stats["entropy"][layer, head] = -plogp.sum(-1).mean()
            stats["first_token"][layer, head] = w[:, 0].mean()
            if name.endswith(".self"):
                stats["distance"][layer, head] = (w * np.abs(q_pos - k_pos)).sum(-1).mean()
                stats["self"][layer, head] = np.diagonal(w).mean()
                if n_q > 1:
                    stats["previous_token"][layer, head] = np.diagonal(w, offset=-1).mean()
    return stats


@pytest.mark.parametrize("checkpoint", sorted(TINY))
def test_blocked_heads_equal_eager_output_attentions(traced, checkpoint):
    trace, reference = traced[checkpoint]
    for name, expected in reference.items():
        n_q, n_k = expected.shape[-2:]
        for layer in range(trace.layers(name)):
            heads = list(range(trace.n_heads))[::-1]  # any order of heads
            got = blocked.assemble(trace.blocks(name, layer, heads, budget=SMALL), len(heads),
                                   range(n_q), n_k)
            np.testing.assert_allclose(got, expected[layer][heads], atol=1e-5, rtol=0,
                                       err_msg=f"{checkpoint} {name} layer {layer}")
            np.testing.assert_allclose(got[::-1], trace.layer_weights(name, layer), atol=1e-6,
                                       rtol=0)


def test_blocks_are_bounded_and_a_causal_block_stops_at_its_last_visible_key(traced):
    trace, _reference = traced["llama"]
    n = len(trace.tokens)
    blocks = list(trace.blocks("decoder.self", 0, budget=SMALL))
    assert len(blocks) > 3
    assert [b.start for b in blocks] == sorted(b.start for b in blocks)
    assert blocks[0].start == 0 and blocks[-1].stop == n
    for block in blocks:
        assert block.weights.shape[-1] == block.stop  # keys past the last row's are all masked
        assert block.weights.numel() * 4 <= max(SMALL, 4 * trace.n_heads * n)


def test_a_region_is_computed_exactly_for_its_rows_and_keys(traced):
    trace, reference = traced["mistral"]  # a sliding window
    expected = reference["decoder.self"][1, 2]
    got = blocked.region(trace, "decoder.self", 1, 2, range(3, 9), range(2, 7))
    np.testing.assert_allclose(got, expected[3:9, 2:7], atol=1e-5, rtol=0)
    with pytest.raises(ValueError):
        blocked.region(trace, "decoder.self", 1, 2, range(3, 9), range(2, 99))
    from model.analysis.cuts import window, window_weights

    shown = window(trace, "decoder.self", 4, 11)  # the head view's window: its rows only
    np.testing.assert_allclose(window_weights(trace, "decoder.self", 1, shown),
                               reference["decoder.self"][1][:, 4:11, 4:11], atol=1e-5, rtol=0)


@pytest.mark.parametrize("checkpoint", ["llama", "bart"])
def test_means_over_layers_and_heads_equal_the_aggregate_and_span_computed_directly(traced,
                                                                                    checkpoint):
    from model.analysis.statistics import aggregate, span_attention

    trace, _reference = traced[checkpoint]
    for name in trace.names:
        n_q, n_k = (len(t) for t in trace.axes(name))
        layers, heads = [0, trace.layers(name) - 1], [1, 0, trace.n_heads - 1]
        expected = aggregate(trace, name, layers, heads)
        mean, factors, mass = blocked.mean_pooled(trace, name, layers, heads, range(n_q),
                                                  range(n_k), max_side=n_q + n_k)
        assert factors == (1, 1)
        np.testing.assert_allclose(mean, expected, atol=1e-6)
        assert mass == pytest.approx(1.0, abs=1e-5)
        pooled, factors, _mass = blocked.mean_pooled(trace, name, layers, heads, range(n_q),
                                                     range(n_k), max_side=4)
        np.testing.assert_allclose(pooled, pool_weights(expected, *factors), atol=1e-6)
        spans = (range(3, n_q), range(0, 4)), (range(1, 5), range(2, n_k))
        for rows, keys in spans:
            block, span_mass = span_attention(expected, (rows.start, rows.stop),
                                              (keys.start, keys.stop))
            got, factors, mass = blocked.mean_pooled(trace, name, layers, heads, rows, keys,
                                                     max_side=64)
            np.testing.assert_allclose(got, block, atol=1e-6)
            assert mass == pytest.approx(span_mass, abs=1e-6)
            got, factors, mass = blocked.mean_pooled(trace, name, layers, heads, rows, keys,
                                                     max_side=2)
            np.testing.assert_allclose(got, pool_weights(block, *factors), atol=1e-6)
            assert mass == pytest.approx(span_mass, abs=1e-6)
    with pytest.raises(ValueError):
        blocked.mean_pooled(trace, trace.names[0], [], [0], range(2), range(2), 8)


@pytest.mark.parametrize("checkpoint", ["bert", "llama", "t5"])
def test_pooled_blocks_equal_pooling_the_exact_weights_and_rows_still_sum_to_one(traced,
                                                                                  checkpoint):
    trace, _reference = traced[checkpoint]
    for name in trace.names:
        n_q, n_k = (len(t) for t in trace.axes(name))
        exact = trace.layer_weights(name, 1)
        for fq, fk in ((1, 1), (2, 3), (3, 2), (5, 7), (n_q, n_k)):
            got = blocked.pool(trace.blocks(name, 1, budget=SMALL), trace.n_heads, n_q, n_k,
                               fq, fk)
            np.testing.assert_allclose(got, pool_weights(exact, fq, fk), atol=1e-6, rtol=0)
            np.testing.assert_allclose(got.sum(-1), 1, atol=1e-5)
        pooled, factors = blocked.head_pooled(trace, name, 1, 0, max_side=4)
        assert factors == (-(-n_q // 4), -(-n_k // 4)) and pooled.shape[0] <= 4
        np.testing.assert_allclose(pooled, pool_weights(exact[0], *factors), atol=1e-6)


@pytest.mark.parametrize("checkpoint", sorted(TINY))
def test_one_pass_summary_equals_the_per_head_numpy_statistics(traced, checkpoint):
    trace, _reference = traced[checkpoint]
    for name in trace.names:
        old = old_head_stats(trace, name)
        n_q, n_k = (len(t) for t in trace.axes(name))
        sizes = {"tile": 4, "grid": 8, "mean_side": 6}
        fine = blocked.summary_factors(n_q, n_k, **sizes)[0]
        for layer, align in itertools.product(range(trace.layers(name)), ((1, 1), fine)):
            # blocks of a few rows, aligned to the finest pooling or not (a block then sums
            # its rows one by one)
            summary = blocked.summarise(trace.blocks(name, layer, budget=SMALL, align=align),
                                        trace.n_heads, n_q, n_k, name.endswith(".self"), **sizes)
            for key, value in summary.stats.items():
                np.testing.assert_allclose(value, old[key][layer], atol=1e-5, rtol=1e-5,
                                           err_msg=f"{checkpoint} {name} {key}")
            exact = trace.layer_weights(name, layer).astype(np.float64)
            np.testing.assert_allclose(summary.tiles, pool_weights(exact, *summary.tile_factors),
                                       atol=1e-6)
            np.testing.assert_allclose(summary.grid, pool_weights(exact, *summary.grid_factors),
                                       atol=1e-6)
            np.testing.assert_allclose(summary.mean, pool_weights(exact.mean(0),
                                                                  *summary.mean_factors),
                                       atol=1e-6)
            assert max(summary.tiles.shape[1:]) <= 4 and max(summary.mean.shape) <= 6
            assert summary.peak == pytest.approx(exact[:, 1:, 1:].max(), abs=1e-6)


def test_dense_stores_of_the_own_models_read_in_blocks_too(seed_trace):
    for name in seed_trace.names:
        n_q, n_k = (len(t) for t in seed_trace.axes(name))
        got = blocked.assemble(seed_trace.blocks(name, 0, [1, 0], budget=64), 2, range(n_q),
                               n_k)
        np.testing.assert_array_equal(got, seed_trace.layer_weights(name, 0)[[1, 0]])
        summary = blocked.layer_summary(seed_trace, name, 0, tile=16, grid=64, mean_side=1024)
        np.testing.assert_allclose(summary.stats["entropy"],
                                   old_head_stats(seed_trace, name)["entropy"][0], atol=1e-5)


def test_blocks_refuse_what_is_not_there(seed_trace):
    name = seed_trace.names[0]
    with pytest.raises(IndexError):
        list(seed_trace.blocks(name, 99))
    with pytest.raises(IndexError):
        list(seed_trace.blocks(name, 0, [seed_trace.n_heads]))
    with pytest.raises(ValueError):
        seed_trace.blocks(name, 0, rows=range(0, 999))


def test_fully_masked_rows_are_zero_not_nan():
    logits = torch.tensor([[[0.0, 1.0], [-torch.inf, -torch.inf]]])
    weights = blocked.softmax_rows(logits, dead=True)
    assert torch.equal(weights[0, 1], torch.zeros(2))
    with_sinks = blocked.softmax_rows(logits.clone(), sinks=torch.tensor([0.5]))
    assert torch.equal(with_sinks[0, 1], torch.zeros(2))
    assert float(with_sinks[0, 0].sum()) < 1  # the sink took its share


def test_a_head_change_runs_neither_the_model_nor_any_pass_over_the_layer_again(monkeypatch):
    """Explore, then a head change, then the analyses: each computation happens once."""
    import app_pages.cache.getters as cache
    from model import load
    from tests.helpers import app_test

    calls = {"trace": 0, "summary": 0, "head": 0}

    def counting(what, function):
        def wrapper(*args, **kwargs):
            calls[what] += 1
            return function(*args, **kwargs)
        return wrapper

    text = "The head changes, and nothing is computed twice: a sentence of its own."
    trace = load("own-random", device="cpu").trace(text)  # for its sizes, before counting
    adapter = type(load("own-random", device="cpu"))
    monkeypatch.setattr(adapter, "trace", counting("trace", adapter.trace))
    monkeypatch.setattr(cache, "summary_of", counting("summary", cache.summary_of))
    monkeypatch.setattr(cache, "head_pooled", counting("head", cache.head_pooled))
    at = app_test("explore", model_choice="own-random", text=text)
    assert not at.exception
    assert calls["summary"] == 1 and calls["head"] == 1 and calls["trace"] >= 1
    traced = calls["trace"]
    first = at.selectbox(key="head").value
    at.selectbox(key="head").set_value((first + 1) % 8).run()
    assert not at.exception
    assert calls == {"trace": traced, "summary": 1, "head": 2}  # only the new head was read
    at.selectbox(key="head").set_value(first).run()
    at.radio(key="colour_scale").set_value("fit").run()
    assert calls == {"trace": traced, "summary": 1, "head": 2}  # a head seen, other colours
    kind = at.session_state["kind"]
    at.switch_page("app_pages/views/stats.py").run()
    at.selectbox(key="st_kind").set_value(kind).run()
    assert not at.exception
    # the stats of Explore's kind: its other layers were read, once each
    assert calls == {"trace": traced, "summary": trace.layers(kind), "head": 2}
    kinds = {kind}
    for page, key in (("rollout", "ro_kind"), ("model_view", "mv_kind"), ("explore", "kind")):
        at.switch_page(script(page)).run()
        assert not at.exception
        kinds.add(at.session_state[key])
    assert calls["trace"] == traced and calls["head"] == 2
    # each kind's layers were read once, whichever pages asked
    assert calls["summary"] == sum(trace.layers(name) for name in kinds)


def test_a_long_head_is_drawn_in_blocks_that_say_so_keep_row_sums_and_weigh_under_a_megabyte():
    import plotly.io as pio

    import viz
    from tests.helpers import plotly_array

    n, factor = 2048, 8
    rng = np.random.default_rng(0)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    weights = np.where(allowed, rng.random((n, n)), 0)
    weights /= weights.sum(-1, keepdims=True)
    tokens = [f"t{i}" for i in range(n)]
    pooled = pool_weights(weights, factor, factor)
    fig = viz.attention_heatmap(pooled, tokens, tokens, allowed=allowed,
                                factors=(factor, factor), max_side=256)
    assert "2048×2048 tokens in blocks of 8×8" in fig.layout.title.text
    z = plotly_array(fig.data[0].z)
    assert z.shape == (256, 256)
    np.testing.assert_allclose(np.nansum(z, axis=1), 1, atol=1e-5)  # masked blocks hold 0
    assert "block" in fig.data[0].hovertemplate and fig.data[0].customdata is None
    assert len(pio.to_json(fig)) < 2**20
    grid = viz.heads_grid(np.stack([pool_weights(weights, 32, 32)] * 9), tokens, tokens,
                          allowed=allowed, factors=(32, 32))
    assert "blocks of 32×32" in grid.layout.title.text
    assert len(pio.to_json(grid)) < 2**20
    # the same figure from the weights themselves: pooled on the page, the same cells
    direct = viz.attention_heatmap(weights, tokens, tokens, allowed=allowed, max_side=256)
    np.testing.assert_allclose(plotly_array(direct.data[0].z), z, atol=1e-6)
    with pytest.raises(ValueError):
        viz.attention_heatmap(pooled, tokens, tokens, factors=(4, 4))  # not 4-token blocks


def test_a_short_head_still_names_both_tokens_of_every_cell():
    import viz

    tokens = ["The", "cat", "sat"]
    fig = viz.attention_heatmap(np.eye(3), tokens, tokens)
    assert tuple(fig.data[0].customdata[2, 1]) == ("2: sat", "1: cat")


@pytest.fixture(scope="module")
def long_llama(tmp_path_factory):
    """A tiny Llama checkpoint that reads long inputs (4,096 positions)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.helpers import byte_level_tokenizer

    tokenizer = byte_level_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, pad_token_id=0, bos_token_id=1,
                         eos_token_id=2)
    path = tmp_path_factory.mktemp("long-llama")
    LlamaForCausalLM(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def test_every_page_draws_a_long_input_in_blocks_that_it_names(long_llama):
    """Past the sizes drawn cell by cell, each page says how it pooled: Explore's head
    (256 a side) with a zoom to exact weights, rollout (blocks past 512 tokens), the
    statistics' average and spans."""
    from model import load
    from tests.helpers import app_test, figures

    text = " ".join(["The cat sat on the mat because it was tired."] * 75)
    n = len(load(long_llama, device="cpu").trace(text).tokens)
    assert 1100 < n < 2000
    at = app_test("explore", model_choice="other…", model_other=long_llama, text=text)
    assert not at.exception
    head = figures(at)[0]
    fq = -(-n // 256)
    assert f"blocks of {fq}×{fq}" in head["layout"]["title"]["text"]
    assert any("Zoom" in expander.label for expander in at.expander)
    at.slider(key="zoom_q").set_value((600, 640)).run()
    titles = [" ".join(re.sub("<[^>]+>", " ", f["layout"]["title"]["text"]).split())
              for f in figures(at)]
    zoom = [t for t in titles if "token by token" in t]  # (long titles wrap at a <br>)
    assert zoom and "Queries 600–639" in zoom[0]
    at.switch_page("app_pages/views/rollout.py").run()
    assert not at.exception
    assert any("rollout multiplies blocks of 3 tokens" in i.value for i in at.info)
    flow = figures(at)[0]
    assert "in blocks of 6×6" in flow["layout"]["title"]["text"]
    at.switch_page("app_pages/views/stats.py").run()
    assert not at.exception
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert any("Weights averaged" in t and f"blocks of {fq}×{fq}" in t for t in titles)
    for page in ("model_view", "head_view", "mask"):
        at.switch_page(script(page)).run()
        assert not at.exception, page


def _reference_weights(call, heads, group, allowed):
    """The formula a captured head follows, in numpy: scores (bias, soft-capping, an additive
    mask), the mask, and a softmax whose sink takes its share."""
    out = []
    for head in heads:
        s = (call.q[0, head] @ call.k[0, head // group].T) * call.scaling
        s = s + call.bias[0, head]
        s = np.tanh(s / call.softcap) * call.softcap
        s = s + call.mask[0, 0]
        s = np.where(allowed, s, -np.inf)
        top = np.maximum(s.max(-1, keepdims=True), call.sinks[head])
        e = np.exp(s - top)
        out.append(e / (e.sum(-1, keepdims=True) + np.exp(call.sinks[head] - top)))
    return np.stack(out)


def test_blocks_keep_position_bias_soft_capping_additive_masks_and_sinks():
    """What gpt-oss, Gemma and T5 record, through every path of LazyAttention.blocks (all
    heads of a grouped layer at once, or some), against the formula in numpy."""
    from model.hf.capture import Call, LazyAttention

    rng = np.random.default_rng(1)
    n, d, heads, kv = 37, 8, 4, 2
    allowed = np.tril(np.ones((n, n), bool)) & ~np.tril(np.ones((n, n), bool), k=-9)  # window
    additive = np.where(allowed, rng.normal(0, 0.1, (n, n)), np.finfo(np.float32).min)
    call = Call("layer", q=rng.normal(size=(1, heads, n, d)).astype(np.float32),
                k=rng.normal(size=(1, kv, n, d)).astype(np.float32), scaling=d ** -0.5,
                mask=additive[None, None].astype(np.float32), causal=False,
                bias=rng.normal(size=(1, heads, n, n)).astype(np.float32), softcap=3.0,
                sinks=rng.normal(size=heads).astype(np.float32))
    store = LazyAttention([call], 0, np.arange(n), np.arange(n))
    np.testing.assert_array_equal(store.mask(0), allowed)
    expected = _reference_weights(call, range(heads), heads // kv, allowed)
    for chosen in (list(range(heads)), [3, 1]):
        for budget in (SMALL, 4 << 20):
            got = blocked.assemble(store.blocks(0, chosen, budget=budget, align=(4, 4)),
                                   len(chosen), range(n), n)
            np.testing.assert_allclose(got, expected[chosen], atol=1e-6, rtol=0)
    assert (expected.sum(-1) < 1).all()  # the sinks took a share of every row
    region = blocked.assemble(store.blocks(0, [2], rows=range(10, 20)), 1, range(10, 20), n)
    np.testing.assert_allclose(region[0], expected[2, 10:20], atol=1e-6, rtol=0)


def test_a_long_rollout_multiplies_the_layers_pooled_in_blocks(long_llama):
    from model import load
    from model.analysis.rollout import rollout, rollout_factor
    from viz.rollout import blocks_peak

    trace = load(long_llama, device="cpu").trace(" ".join(["The cat sat on the mat."] * 90))
    n = len(trace.tokens)
    factor = rollout_factor(n)
    assert 512 < n and factor == -(-n // 512) > 1
    result = np.eye(-(-n // factor))
    for layer in range(trace.layers("decoder.self")):  # the docstring's recipe, in numpy
        pooled = pool_weights(trace.mean_weights("decoder.self", layer).astype(np.float64),
                              factor, factor)
        mixed = 0.5 * np.eye(len(pooled)) + 0.5 * pooled
        result = mixed / mixed.sum(-1, keepdims=True) @ result
    np.testing.assert_allclose(rollout(trace, "decoder.self")[-1], result, atol=1e-5)
    drawn = np.array([[0.9, 0.2], [0.3, 0.8]])  # blocks of 2: own cells on the diagonal
    assert blocks_peak(drawn, 4, 2) == 0.3
    assert blocks_peak(drawn, 4, 2, first_key=1) == 0.2  # token 2's own key is in block 0


def test_blocks_hold_about_the_budget_and_at_least_min_rows():
    from model.store import BLOCK_BYTES, MIN_ROWS, rows_per_block

    for heads, keys in ((9, 2048), (9, 8192), (32, 8192), (1, 100_000), (12, 128)):
        rows = rows_per_block(heads, keys)
        assert rows >= MIN_ROWS
        assert rows * heads * keys * 4 <= max(BLOCK_BYTES, MIN_ROWS * heads * keys * 4)
        assert rows_per_block(heads, keys, align=16) % 16 == 0
    assert rows_per_block(9, 2048) == 113 and rows_per_block(9, 8192) == MIN_ROWS
    assert rows_per_block(4, 10, budget=600) == 3  # a small budget: a few rows (tests)
