"""Shapes, parameter split, costs and positional data for the views."""

from __future__ import annotations

import numpy as np

from model.analysis.costs import attention_costs, parameter_split, stage_shapes
from model.analysis.positions import model_positions, rope_offset_scores, sinusoidal
from model.hf import HFModel
from tests.helpers import SEED_SENTENCE


def test_seed_default_parameter_split_matches_seed_3_5(own_random):
    split = parameter_split(own_random)
    # 6 encoder layers: self-attention; 6 decoder layers: self- and cross-attention
    assert split["attention"] == 18 * 1_050_624
    assert split["ffn"] == 12 * 2_099_712
    assert split["total"] == sum(p.numel() for p in own_random.network.parameters())


def test_stage_shapes_follow_the_run(own_random, seed_trace):
    rows = {stage: shape for stage, shape, _ in stage_shapes(own_random.dims, seed_trace)}
    assert rows["encoder: token ids"] == "(1, 6)"
    assert rows["encoder: embeddings (+ positions)"] == "(1, 6, 512)"
    assert rows["encoder: Q after the head split"] == "(1, 8, 6, 64)"
    assert rows["encoder: scores QKᵀ/√d_k"] == "(1, 8, 6, 6)"
    assert rows["decoder: cross-attention scores"] == "(1, 8, 7, 6)"


def test_gqa_costs_and_shapes_of_a_tiny_llama(tiny_checkpoints):
    llama = HFModel.load(str(tiny_checkpoints["llama"]), device="cpu")
    trace = llama.trace(SEED_SENTENCE)
    n = len(trace.tokens)
    d = llama.dims
    assert (d.d_model, d.n_heads, d.n_kv_heads, d.d_head, d.d_ff) == (32, 4, 2, 8, 64)
    assert (d.n_encoder_layers, d.n_decoder_layers) == (0, 2)
    split = parameter_split(llama)
    assert split["attention"] == 2 * (32 * 32 + 32 * 16 + 32 * 16 + 32 * 32)
    assert split["ffn"] == 2 * 3 * 32 * 64
    costs = attention_costs(d, trace)
    assert costs["attention_values"] == 2 * 4 * n * n
    assert costs["kv_cache_bytes"] == 2 * 2 * 2 * 8 * n * 4  # K and V, 2 layers, 2 K/V heads
    assert costs["kv_cache_bytes_without_gqa"] == 2 * costs["kv_cache_bytes"]
    kv_row = [r for r in stage_shapes(d, trace) if r[0] == "decoder: K, V"][0]
    assert kv_row[1] == f"(1, 2, {n}, 8)" and "shared by 2" in kv_row[2]
    positions = model_positions(llama)
    assert positions["scheme"] == "rope" and len(positions["periods"]) == 4


def test_positional_data():
    table = sinusoidal(32, 16)
    assert table.shape == (32, 16)
    scores = rope_offset_scores(n_positions=12)
    for offset in range(-5, 6):
        diagonal = np.diagonal(scores, offset=offset)
        assert np.ptp(diagonal) < 1e-9


def test_learned_position_embeddings_of_minilm_style_models(tiny_checkpoints):
    bert = HFModel.load(str(tiny_checkpoints["bert"]), device="cpu")
    positions = model_positions(bert, n_positions=20)
    assert positions["scheme"] == "learned"
    assert positions["similarity"].shape == (20, 20)
    np.testing.assert_allclose(np.diagonal(positions["similarity"]), 1.0, atol=1e-6)
