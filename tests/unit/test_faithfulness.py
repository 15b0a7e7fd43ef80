"""What attention moves (issue 26's first numbers): weight × ‖value after W_O‖ against a direct
computation from the own translator's tensors, and the sink left out with every row
renormalised against a direct renormalisation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.faithfulness import value_norms, weight_times_value_norm, without_sink
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
