"""Lesson §3.4, every mask: each mask's softmax against torch's own scaled_dot_product_attention,
the model's own weights reproduced by its mask, a real padded batch against each sentence run
alone, and the page's figures following the window and the prefix."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.lessons.masks import (
    MASKS,
    build_mask,
    every_mask,
    head_scores,
    masked_softmax,
    matching_masks,
    model_mask,
    padded_batch,
)
from model.meta import Family
from tests.helpers import app_test, figures, plotly_array
from viz.lessons.masks import mask_steps

SENTENCE, LONGER = "The cat sat on the mat", "The dog chased the cat because it was angry"


@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


@pytest.fixture(scope="module")
def traces(translator):
    return translator.trace(SENTENCE), translator.trace(LONGER)


def _sdpa(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """torch's scaled_dot_product_attention made to see ``scores`` as its QKᵀ/√d: with K and V
    the identity (d = keys), Q = scores·√d gives QKᵀ/√d = scores and the output is the
    weights."""
    n_q, n_k = scores.shape
    q = torch.tensor(scores * math.sqrt(n_k), dtype=torch.float64)[None, None]
    eye = torch.eye(n_k, dtype=torch.float64)[None, None]
    out = F.scaled_dot_product_attention(q, eye, eye, attn_mask=torch.tensor(allowed))
    return out[0, 0].numpy()


# --- the masks ---------------------------------------------------------------------------------

@pytest.mark.parametrize("width,prefix", [(1, 0), (3, 2), (7, 7), (2, 5)])
def test_each_masks_softmax_is_torchs_scaled_dot_product_attention(width, prefix):
    scores = np.random.default_rng(width * 10 + prefix).normal(0, 3, (7, 7))
    for mask, result in every_mask(scores, width=width, prefix=prefix).items():
        np.testing.assert_allclose(result.weights, _sdpa(scores, result.allowed), atol=1e-12,
                                   err_msg=mask)
        by_hand = np.where(result.allowed, np.exp(scores - scores.max()), 0.0)
        np.testing.assert_allclose(result.weights, by_hand / by_hand.sum(-1, keepdims=True),
                                   atol=1e-12, err_msg=mask)


def test_rows_sum_to_one_and_masked_cells_are_exactly_zero():
    scores = np.random.default_rng(1).normal(0, 10, (9, 9))
    for mask, result in every_mask(scores, width=3, prefix=4).items():
        np.testing.assert_allclose(result.weights.sum(-1), 1.0, atol=1e-12, err_msg=mask)
        assert (result.weights[~result.allowed] == 0).all(), mask
        assert (result.weights[result.allowed] > 0).all(), mask


def test_the_masks_are_the_ones_their_names_say():
    n = 6
    tril = np.tril(np.ones((n, n), dtype=bool))
    assert build_mask("bidirectional", n).all()
    assert (build_mask("causal", n) == tril).all()
    assert (build_mask("sliding", n, width=n) == tril).all()
    assert (build_mask("sliding", n, width=1) == np.eye(n, dtype=bool)).all()
    band = build_mask("sliding", n, width=3)
    assert band[5].tolist() == [False, False, False, True, True, True]
    assert (build_mask("prefix", n, prefix=0) == tril).all()
    assert build_mask("prefix", n, prefix=n).all()
    prefix = build_mask("prefix", n, prefix=3)
    assert prefix[0].tolist() == [True, True, True, False, False, False]  # sees the prefix
    assert prefix[4].tolist() == [True, True, True, True, True, False]  # causal after it
    keep = np.array([True] * 4 + [False] * 2)
    assert not build_mask("bidirectional", n, keep=keep)[:, 4:].any()
    for bad in ({"width": 0}, {"width": n + 1}):
        with pytest.raises(ValueError):
            build_mask("sliding", n, **bad)
    with pytest.raises(ValueError):
        build_mask("prefix", n, prefix=n + 1)
    with pytest.raises(ValueError):
        build_mask("dilated", n)
    with pytest.raises(ValueError):  # a row with nothing to attend to
        masked_softmax(np.zeros((2, 2)), np.array([[True, False], [False, False]]))


def test_the_family_names_the_mask_each_kind_uses():
    assert model_mask(Family.ENCODER_ONLY, "encoder.self") == "bidirectional"
    assert model_mask(Family.DECODER_ONLY, "decoder.self") == "causal"
    assert model_mask(Family.ENCODER_DECODER, "decoder.self") == "causal"
    assert model_mask(Family.ENCODER_DECODER, "decoder.cross") == "bidirectional"


def test_the_causal_mask_on_a_decoder_heads_scores_reproduces_the_traces_weights(traces):
    trace = traces[0]
    for name, expected in (("decoder.self", "causal"), ("encoder.self", "bidirectional")):
        for layer in range(trace.layers(name)):
            for head in range(trace.n_heads):
                view = head_scores(trace, name, layer, head)
                results = every_mask(view.scores, width=2, prefix=2)
                assert matching_masks(view.own_mask, results) == [expected]
                assert view.complete and not view.cut
                np.testing.assert_allclose(results[expected].weights,
                                           trace.weights(name, layer, head), atol=1e-6)
                # torch's own attention, from the trace's scores and the model's mask
                np.testing.assert_allclose(_sdpa(view.scores, view.own_mask),
                                           trace.weights(name, layer, head), atol=1e-6)


def test_a_long_input_shows_its_first_tokens_and_keeps_causal_rows_whole(translator):
    trace = translator.trace(" ".join(["the cat sat on the mat"] * 3))
    view = head_scores(trace, "decoder.self", 0, 0, limit=4)
    assert view.cut and view.n == 4 and view.complete  # a causal row never reads past the cut
    assert not head_scores(trace, "encoder.self", 0, 0, limit=8).complete
    with pytest.raises(ValueError):
        head_scores(trace, "decoder.cross", 0, 0)


# --- padding -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["encoder.self", "decoder.self", "decoder.cross"])
def test_the_padded_batch_leaves_each_sentence_as_it_was_alone(translator, traces, name):
    short, long = traces
    for layer in range(short.layers(name)):
        for head in range(short.n_heads):
            batch = padded_batch(translator, traces, name, layer, head)
            assert batch.padded == 0 and batch.shapes["encoder"] == (2, len(long.source_ids))
            for b, trace in enumerate(traces):
                n_q, n_k = (len(axis) for axis in trace.axes(name))
                assert batch.lengths[b] == (n_q, n_k)
                weights = batch.weights[b]
                # the real rows: the sentence's own trace, run alone
                np.testing.assert_allclose(weights[:n_q, :n_k], trace.weights(name, layer, head),
                                           atol=1e-5)
                assert (weights[:, n_k:] == 0).all()  # padding keys: exactly 0, every row
                np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
                # the network's own mask: padding keys hidden (and the causal triangle)
                expected = np.zeros_like(batch.allowed[b])
                expected[:, :n_k] = True
                if name == "decoder.self":
                    expected &= np.tril(np.ones_like(expected))
                assert (batch.allowed[b] == expected).all()
    assert batch.padded_weight == 0.0 and max(batch.difference) < 1e-5
    assert batch.key_tokens[0][-1] == "<pad>" and "<pad>" not in batch.key_tokens[1]


def test_the_padded_batch_of_random_weights_too():
    from model import load

    model = load("own-random", device="cpu")
    traces = (model.trace("the cat sat"), model.trace("a dog slept on the old mat"))
    batch = padded_batch(model, traces, "encoder.self", 5, 7)
    assert batch.padded_weight == 0.0 and max(batch.difference) < 1e-5
    assert (batch.weights[0][:, 3:] == 0).all()
    with pytest.raises(ValueError):
        padded_batch(model, traces, "encoder.self", 6, 0)


# --- the figure --------------------------------------------------------------------------------

def test_the_figure_writes_minus_infinity_in_the_forbidden_cells_only():
    scores = np.arange(16.0).reshape(4, 4)
    result = every_mask(scores, width=2, prefix=1)["sliding"]
    tokens = ["a", "b", "c", "d"]
    fig = mask_steps(scores, result.allowed, result.weights, tokens, tokens)
    names = [t.name for t in fig.data]
    assert names == ["scores", "mask", "−∞", "weights", "masked"]
    marks = {(a.x, a.y) for a in fig.layout.annotations if a.name == "mark"}
    assert marks == {(c, r) for r, c in zip(*np.nonzero(~result.allowed))}
    weights = np.array(fig.data[3].z, dtype=float)
    assert np.isnan(weights[~result.allowed]).all()
    with pytest.raises(ValueError):
        mask_steps(scores, result.allowed[:3], result.weights, tokens, tokens)


# --- the page ----------------------------------------------------------------------------------

def _mask_of(at, title: str) -> np.ndarray:
    fig = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith(title))
    mask = next(t for t in fig["data"] if t.get("name") == "mask")
    return ~np.isnan(plotly_array(mask["z"]).astype(float).reshape(6, 6))


def test_the_page_follows_the_window_and_the_prefix():
    at = app_test("lesson_masks", model_choice="own-translator")
    assert not at.exception, at.exception
    assert len(figures(at)) == 5  # four masks and the padded batch
    before = _mask_of(at, "Sliding window"), _mask_of(at, "Prefix-LM")
    assert (before[0] == build_mask("sliding", 6, width=3)).all()
    assert (before[1] == build_mask("prefix", 6, prefix=3)).all()
    at.slider(key="masks_window").set_value(2).run()
    at.slider(key="masks_prefix").set_value(5).run()
    assert not at.exception, at.exception
    after = _mask_of(at, "Sliding window"), _mask_of(at, "Prefix-LM")
    assert (after[0] == build_mask("sliding", 6, width=2)).all()
    assert (after[1] == build_mask("prefix", 6, prefix=5)).all()
    padding = figures(at)[-1]
    weights = plotly_array(next(t for t in padding["data"] if t.get("name") == "weights")["z"])
    weights = weights.astype(float).reshape(9, 9)
    assert np.nan_to_num(weights[:, 6:]).max() == 0  # the lesson's sentence, padded to 9
    assert "0" in " ".join(m.value for m in at.markdown)


@pytest.mark.slow
def test_the_page_survives_values_it_cannot_show_and_reads_the_sidebars_model():
    at = app_test("lesson_masks", model_choice="own-translator", masks_window=999,
                  masks_prefix=-4, masks_layer=42, masks_head=-1, masks_kind="decoder.cross",
                  masks_source="elsewhere", masks_second=7)
    assert not at.exception, at.exception
    assert len(figures(at)) == 5
    at = app_test("lesson_masks", model_choice="own-random", masks_source="sidebar")
    assert not at.exception, at.exception
    assert len(figures(at)) == 5


def test_every_mask_is_offered_in_the_order_the_lesson_shows():
    assert MASKS == ("bidirectional", "causal", "sliding", "prefix")
