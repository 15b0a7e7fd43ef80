"""Lesson §5.1–5.2, the panorama: the layer counts against their formulas and against the own
translator's trained layer, the path lengths, the measured rows taken from lesson 3.6's
measurements unchanged, and the page following its width and length."""

from __future__ import annotations

import numpy as np
import pytest
from torch import nn

from model.lessons.panorama import (
    ARCHITECTURES,
    layer_parameters,
    measured,
    module_kinds,
    path_lengths,
)
from model.lessons.rnn import Forgetting, GradientProfile, Timing
from tests.helpers import app_test


@pytest.mark.parametrize("d", [1, 7, 128])
def test_the_cells_parameters_are_the_formulas_one_four_and_three_gates(d):
    layers = layer_parameters(d, 10)
    one = d * d + d * d + 2 * d  # W_ih, W_hh and their two biases
    assert layers.parameters["RNN"] == one
    assert layers.parameters["LSTM"] == 4 * one and layers.ratio("LSTM") == 4
    assert layers.parameters["GRU"] == 3 * one and layers.ratio("GRU") == 3


def test_the_transformer_layer_is_the_own_translators_and_attention_adds_n_squared():
    from model import load

    network = load("own-translator", device="cpu").network
    d = network.cfg.d_model
    assert network.cfg.d_ff == 4 * d
    trained = sum(p.numel() for p in network.encoder.layers[0].parameters())
    layers = layer_parameters(d, 50)
    assert layers.parameters["Transformer"] == trained
    weights = sum(p.numel() for p in network.encoder.layers[0].parameters() if p.dim() == 2)
    assert weights == 12 * d * d  # W_Q, W_K, W_V, W_O and the FFN's two d × 4d matrices
    assert layers.multiply_adds["Transformer"] == 50 * weights + 2 * 50 * 50 * d
    assert layers.multiply_adds["GRU"] == 50 * 3 * 2 * d * d


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        layer_parameters(0, 4)
    with pytest.raises(ValueError, match="at least 1"):
        path_lengths([0, 3])
    with pytest.raises(ValueError, match="at least 1"):
        path_lengths([])


def test_the_paths_are_counted_alike_and_shorten_in_the_lessons_order():
    paths = path_lengths([1, 10, 1000])
    np.testing.assert_array_equal(paths.recurrent, [1, 10, 1000])
    np.testing.assert_array_equal(paths.attention_rnn, [2, 2, 2])
    np.testing.assert_array_equal(paths.transformer, [1, 1, 1])
    long = path_lengths([64])  # §5.2: RNN, then Seq2Seq + attention, then the Transformer
    assert long.recurrent[0] > long.attention_rnn[0] > long.transformer[0]


def test_module_kinds_count_the_leaves():
    network = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.LayerNorm(3), nn.Linear(3, 3)))
    assert module_kinds(network) == {"Linear": 2, "LayerNorm": 1}


def test_the_measured_rows_are_lesson_3_6s_measurements():
    forgetting = Forgetting(((1, 6), (7, 18)), (10, 5), {
        "own-rnn": [1.0, 0.2], "own-gru": [1.0, 0.6], "own-bahdanau": [1.0, 1.0],
        "own-translator": [1.0, 0.9]})
    distance = np.arange(16)
    profile = GradientProfile(distance, {"own-rnn": 0.5 ** distance, "own-gru": 0.8 ** distance,
                                         "own-translator": np.ones(16)}, 3)
    timing = Timing((8, 64, 512), (0.008, 0.064, 0.512), (0.004, 0.008, 0.256), "cpu")
    rows = measured(forgetting, profile, timing)
    assert rows.longest == (7, 18)
    assert rows.exact_longest == {"RNN": 0.2, "LSTM": None, "GRU": 0.6, "Transformer": 0.9}
    # far: the ten distances 6..15, near: 1..5, each side's median
    for name, base in (("RNN", 0.5), ("GRU", 0.8)):
        far, near = base ** np.arange(6, 16), base ** np.arange(1, 6)
        assert rows.far_over_near[name] == pytest.approx(np.median(far) / np.median(near))
    assert rows.far_over_near["Transformer"] == 1.0 and rows.far_over_near["LSTM"] is None
    assert rows.growth["GRU"] == pytest.approx(64) and rows.growth["RNN"] is None
    assert rows.per_token["GRU"] == pytest.approx((0.001, 0.001, 0.001))
    assert rows.cheapest("Transformer") == 64
    assert set(rows.exact_longest) == set(ARCHITECTURES)


def _row(at, table: int, starts: str) -> list[str]:
    frame = at.table[table].value
    (index,) = [i for i, name in enumerate(frame.iloc[:, 0]) if str(name).startswith(starts)]
    return list(frame.iloc[index, 1:])


@pytest.mark.apptest
def test_the_page_follows_the_width_and_the_length():
    at = app_test("lesson_panorama", pn_width=128, pn_length=512)
    assert not at.exception, at.exception
    assert _row(at, 1, "parameters")[2].startswith("99,072 (×3.0)")
    assert _row(at, 1, "steps from")[0] == "512" and _row(at, 1, "steps from")[3] == "1"
    at = app_test("lesson_panorama", pn_width=64, pn_length=32)
    assert not at.exception, at.exception
    expected = layer_parameters(64, 32).parameters
    assert [cell.split(" ")[0] for cell in _row(at, 1, "parameters")] == [
        f"{expected[name]:,}" for name in ARCHITECTURES]
    assert _row(at, 1, "steps from")[0] == "32"
    assert _row(at, 1, "sequential")[0] == "32" and _row(at, 1, "sequential")[3] == "1"
