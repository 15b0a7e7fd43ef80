"""What attention moves (issue 26's first numbers): weight × ‖value after W_O‖ against a direct
computation from the own translator's tensors, and the sink left out with every row
renormalised against a direct renormalisation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.faithfulness import (
    cosine_distance,
    value_norms,
    weight_times_value_norm,
    without_sink,
)
from model.own.hooks import capture
from tests.helpers import SEED_SENTENCE


@pytest.fixture(scope="module")
def layer():
    """The own translator's first encoder layer on the seed sentence: its values, weights,
    W_O and the attention module's output."""
    from model import load

    model = load("own-translator", device="cpu")
    network = model.network
    attention = network.encoder.layers[0].self_attn
    outputs = []
    handle = attention.register_forward_hook(lambda _m, _i, out: outputs.append(out[0].detach()))
    prefix = "encoder.layers.0.self_attn."
    try:
        with capture(network, lambda name: name.startswith(prefix)) as store:
            model.trace(SEED_SENTENCE)
    finally:
        handle.remove()
    return {"values": store[prefix + "hook_v"][0].double(),  # [head, key, d_head]
            "weights": store[prefix + "hook_pattern"][0].double(),  # [head, query, key]
            "w_o": attention.W_O.weight.detach().double(), "b_o": attention.W_O.bias.detach(),
            "output": outputs[0][0].double()}  # [query, d_model]


def test_weight_times_value_norm_is_the_norm_of_what_each_key_adds(layer):
    values, weights, w_o = layer["values"], layer["weights"], layer["w_o"]
    heads, queries, keys = weights.shape
    d_head = values.shape[-1]
    moved = weight_times_value_norm(weights.numpy(), values.numpy(), w_o.numpy())
    added = torch.zeros(queries, w_o.shape[0], dtype=torch.float64)
    for h in range(heads):
        w_h = w_o[:, h * d_head:(h + 1) * d_head]  # [d_model, d_head]
        for i in range(queries):
            for j in range(keys):
                vector = weights[h, i, j] * (w_h @ values[h, j])  # what key j adds to query i
                assert moved[h, i, j] == pytest.approx(float(vector.norm()), rel=1e-9, abs=1e-12)
                added[i] += vector
    # the pieces add up to the module's own output (W_O's bias once per query)
    torch.testing.assert_close(added + layer["b_o"].double(), layer["output"], atol=1e-5, rtol=0)
    norms = np.broadcast_to(value_norms(values.numpy(), w_o.numpy())[:, None, :], moved.shape)
    positive = weights.numpy() > 0
    np.testing.assert_allclose(moved[positive] / weights.numpy()[positive], norms[positive],
                               rtol=1e-9)


def test_a_key_whose_value_is_zero_moves_nothing_whatever_its_weight():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(2, 4, 3))
    values[1, 2] = 0.0
    weights = np.full((2, 4, 4), 0.25)
    moved = weight_times_value_norm(weights, values, rng.normal(size=(5, 6)))
    assert np.all(moved[1, :, 2] == 0) and np.all(moved[0, :, 2] > 0)


def test_shapes_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        value_norms(np.zeros((2, 4, 3)), np.zeros((5, 7)))
    with pytest.raises(ValueError, match="do not fit"):
        weight_times_value_norm(np.zeros((3, 4, 4)), np.zeros((2, 4, 3)), np.zeros((5, 6)))
    with pytest.raises(ValueError, match="sink"):
        without_sink(np.eye(3), sink=3)


def test_the_sink_left_out_renormalises_every_row(layer):
    weights = layer["weights"].numpy()
    result = without_sink(weights, sink=0)
    np.testing.assert_array_equal(result.left_out, weights[..., 0])
    assert np.all(np.isnan(result.weights[..., 0]))
    np.testing.assert_allclose(np.nansum(result.weights, axis=-1), 1.0, rtol=1e-12)
    # directly: each other key's weight over the row's weight outside key 0
    direct = weights[..., 1:] / weights[..., 1:].sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(result.weights[..., 1:], direct, rtol=1e-12)


def test_a_row_wholly_on_the_sink_has_nothing_left_to_share():
    causal = np.tril(np.ones((3, 3)))
    causal /= causal.sum(axis=-1, keepdims=True)  # the first row: all its weight on token 0
    result = without_sink(causal)
    assert np.all(np.isnan(result.weights[0]))
    np.testing.assert_allclose(result.weights[2, 1:], [0.5, 0.5])
    np.testing.assert_allclose(result.left_out, [1.0, 0.5, 1 / 3])


# --- interventions on the own models: head ablation and value zeroing --------------------------

@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


def _attention_output(model, kind: str, layer: int, text: str = SEED_SENTENCE):
    from model.own.hooks import hook_name, record

    stack, attribute = kind.split(".")[0], "self_attn" if kind.endswith("self") else "cross_attn"
    module = getattr(getattr(model.network, stack).layers[layer], attribute)
    with record([module]) as store:
        model.trace(text, "猫 坐 在 垫子 上")
    return store[hook_name(module)][0][0].double(), module


@pytest.mark.parametrize("kind", ["encoder.self", "decoder.cross"])
def test_ablating_every_head_removes_the_sublayers_contribution(translator, kind):
    from model.own.ablation import heads_ablated

    before, module = _attention_output(translator, kind, 1)
    with heads_ablated(translator.network, kind, 1) as heads:
        after, _ = _attention_output(translator, kind, 1)
    assert heads == list(range(module.n_heads))
    bias = module.W_O.bias.detach().double()
    torch.testing.assert_close(after, bias.expand_as(after), atol=1e-6, rtol=0)
    assert not torch.allclose(before, after)
    again, _ = _attention_output(translator, kind, 1)  # the block closed: nothing is left changed
    torch.testing.assert_close(again, before)


def test_ablating_one_head_takes_away_exactly_its_share(translator):
    from model.own.ablation import heads_ablated
    from model.own.hooks import capture

    kind, layer, head = "encoder.self", 0, 2
    before, module = _attention_output(translator, kind, layer)
    prefix = "encoder.layers.0.self_attn."
    with capture(translator.network, lambda name: name.startswith(prefix)) as store:
        translator.trace(SEED_SENTENCE, "猫 坐 在 垫子 上")
    z = store[prefix + "hook_z"][0, head].double()  # [query, d_head]
    d_head = module.d_head
    share = z @ module.W_O.weight.detach().double()[:, head * d_head:(head + 1) * d_head].T
    with heads_ablated(translator.network, kind, layer, [head]):
        after, _ = _attention_output(translator, kind, layer)
    torch.testing.assert_close(after, before - share, atol=1e-5, rtol=0)


def test_value_zeroing_of_a_key_already_zero_changes_nothing(translator):
    from model.analysis.faithfulness import value_zeroing_scores
    from model.own.ablation import value_zeroed

    kind, layer, target = "encoder.self", 1, "猫 坐 在 垫子 上"
    keys = len(SEED_SENTENCE.split())
    plain = translator.layer_outputs(SEED_SENTENCE, kind, layer, list(range(keys)), target)
    distance = cosine_distance(plain[1:], plain[0][None]).T  # [query, key]
    assert distance.shape == (keys, keys) and np.all(distance >= 0)
    np.testing.assert_allclose(value_zeroing_scores(plain[0], plain[1:]).sum(axis=-1), 1.0,
                               rtol=1e-12)
    assert np.all(distance[:, 4] > 0)  # zeroing "the" before "mat" changes every row
    with value_zeroed(translator.network, kind, layer, 4):  # its value is zero already
        zeroed = translator.layer_outputs(SEED_SENTENCE, kind, layer, [4], target)
    np.testing.assert_allclose(cosine_distance(zeroed[1], zeroed[0]), 0.0, atol=1e-12)
    assert np.all(value_zeroing_scores(zeroed[0], zeroed[1:])[:, 0] == 0)


def test_an_intervention_on_a_point_the_model_lacks_is_refused(translator):
    from model.own.ablation import heads_ablated
    from model.own.hooks import intervene

    with pytest.raises(KeyError, match="no hook point"):
        with intervene(translator.network, {"encoder.layers.9.self_attn.hook_z": lambda t: t}):
            pass
    with pytest.raises(ValueError, match="not among"):
        with heads_ablated(translator.network, "encoder.self", 0, [7]):
            pass
    with pytest.raises(ValueError, match="layer 5"):
        with heads_ablated(translator.network, "encoder.self", 5):
            pass


def test_value_zeroing_equals_the_layer_recomputed_by_hand_without_the_keys_share(translator):
    """The encoder layer written out from its own modules: its attention output less key j's
    share Σ_h α_ij v_j W_Oʰ (what a zero value of key j leaves), then Add & Norm, the FFN and
    Add & Norm; 1 − cos against the layer's real output is value zeroing's distance."""
    from model.own.hooks import INPUT, capture, record

    layer = translator.network.encoder.layers[0]
    attention = layer.self_attn
    prefix = "encoder.layers.0.self_attn."
    with capture(translator.network, lambda n: n.startswith(prefix)) as points, \
            record([layer, attention], inputs=[layer]) as store:
        translator.trace(SEED_SENTENCE, "猫 坐 在 垫子 上")
    x = store["encoder.layers.0" + INPUT]["x"][0].double()  # [key, d_model]
    out = store["encoder.layers.0"][0].double()
    attended = store["encoder.layers.0.self_attn"][0][0].double()
    weights = points[prefix + "hook_pattern"][0].double()  # [head, query, key]
    values = points[prefix + "hook_v"][0].double()  # [head, key, d_head]
    w_o, d_head = attention.W_O.weight.detach().double(), attention.d_head
    layer64 = layer.double()
    try:
        expected = np.zeros((x.shape[0], x.shape[0]))
        for j in range(x.shape[0]):
            share = sum(weights[h, :, j:j + 1]
                        * (values[h, j] @ w_o[:, h * d_head:(h + 1) * d_head].T)
                        for h in range(weights.shape[0]))  # [query, d_model]
            y = layer64.residual_attn(x, attended - share)
            by_hand = layer64.residual_ffn(y, layer64.ffn(y))
            expected[:, j] = (1 - torch.nn.functional.cosine_similarity(out, by_hand, dim=-1)
                              ).clamp_min(0).detach().numpy()
    finally:
        layer.float()
    outputs = translator.layer_outputs(SEED_SENTENCE, "encoder.self", 0,
                                       list(range(x.shape[0])), "猫 坐 在 垫子 上")
    np.testing.assert_allclose(cosine_distance(outputs[1:], outputs[0][None]).T, expected,
                               atol=2e-6)


def test_an_intervention_changes_only_the_thread_that_opened_it(translator):
    import threading

    from model.own.ablation import heads_ablated

    before, module = _attention_output(translator, "encoder.self", 1)
    opened, done = threading.Event(), threading.Event()
    seen = {}

    def ablating():
        with heads_ablated(translator.network, "encoder.self", 1):
            opened.set()
            seen["inside"], _ = _attention_output(translator, "encoder.self", 1)
            done.wait(60)

    thread = threading.Thread(target=ablating)
    thread.start()
    try:
        assert opened.wait(60)
        other, _ = _attention_output(translator, "encoder.self", 1)  # another session's pass
    finally:
        done.set()
        thread.join(60)
    torch.testing.assert_close(other, before)
    bias = module.W_O.bias.detach().double()
    torch.testing.assert_close(seen["inside"], bias.expand_as(before), atol=1e-6, rtol=0)
