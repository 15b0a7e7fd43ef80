"""The attention function and multi-head attention against the seed and PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.own.config import TransformerConfig
from model.own.hooks import capture
from model.own.transformer import MultiHeadAttention, Transformer, attention, causal_mask

# Seed 4.3: the query of 它 and the keys / values of 猫 追 老鼠 它.
SEED_Q = [1.0, 0.0]
SEED_K = [[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [1.0, 0.0]]
SEED_V = [[2.0, 1.0], [0.0, 3.0], [1.0, 2.0], [0.0, 0.0]]


def _seed_tensors():
    Q = torch.tensor(SEED_Q, dtype=torch.float64).view(1, 1, 1, 2)  # [batch, head, query, d_head]
    K = torch.tensor(SEED_K, dtype=torch.float64).view(1, 1, 4, 2)  # [batch, head, key, d_head]
    V = torch.tensor(SEED_V, dtype=torch.float64).view(1, 1, 4, 2)  # [batch, head, key, d_v]
    return Q, K, V


def test_seed_hand_calculation_matches_the_seed_to_two_decimals():
    out, weights = attention(*_seed_tensors())
    weights, out = weights.view(4).numpy(), out.view(2).numpy()
    # Exact values are [0.3028, 0.1493, 0.2450, 0.3028] and [0.8506, 1.2407]; the seed rounds
    # each intermediate step, so its printed numbers agree to within 0.01.
    np.testing.assert_allclose(weights, [0.30, 0.15, 0.25, 0.30], atol=0.01)
    np.testing.assert_allclose(out, [0.85, 1.25], atol=0.01)
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_seed_hand_calculation_with_the_seeds_rounding_gives_its_exact_numbers():
    # Step 3 of seed 4.3 divides by √2 ≈ 1.41 and rounds the scores to 0.71, 0.00, 0.50, 0.71
    # before softmax; step 5 mixes V with the weights rounded to 0.30, 0.15, 0.25, 0.30.
    def seed_rounding(scores):
        return torch.round(scores * math.sqrt(2) / 1.41, decimals=2)

    _, weights = attention(*_seed_tensors(), scores_hook=seed_rounding)
    rounded = np.round(weights.view(4).numpy(), 2)
    np.testing.assert_allclose(rounded, [0.30, 0.15, 0.25, 0.30], atol=1e-12)
    np.testing.assert_allclose(rounded @ np.array(SEED_V), [0.85, 1.25], atol=1e-12)


def _torch_mha_with_same_weights(mha: MultiHeadAttention, d_model: int, n_heads: int):
    ref = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_Q.weight, mha.W_K.weight, mha.W_V.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.W_Q.bias, mha.W_K.bias, mha.W_V.bias]))
        ref.out_proj.weight.copy_(mha.W_O.weight)
        ref.out_proj.bias.copy_(mha.W_O.bias)
    return ref.eval()


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_equals_torch_multihead_attention(causal):
    torch.manual_seed(1)
    d_model, n_heads, L = 64, 8, 7
    mha = MultiHeadAttention(d_model, n_heads).eval()
    ref = _torch_mha_with_same_weights(mha, d_model, n_heads)
    x = torch.randn(2, L, d_model)
    mask = causal_mask(L) if causal else None
    out, weights = mha(x, x, x, mask)
    ref_out, ref_weights = ref(x, x, x, attn_mask=~causal_mask(L)[0, 0] if causal else None,
                               need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, ref_weights, atol=1e-5, rtol=0)
    if causal:
        assert torch.all(weights[..., ~causal_mask(L)[0, 0]] == 0)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_function_equals_scaled_dot_product_attention(causal):
    torch.manual_seed(2)
    Q, K, V = (torch.randn(2, 4, 5, 16) for _ in range(3))  # [batch, head, pos, d_head]
    mask = causal_mask(5) if causal else None
    out, _ = attention(Q, K, V, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V, is_causal=causal),
                               atol=1e-5, rtol=0)


def test_seed_default_encoder_shapes_follow_seed_3_5():
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=100, n_decoder_layers=0)
    net = Transformer(cfg).eval()
    B, L = 2, 6
    ids = torch.randint(4, 100, (B, L))
    seen = {}

    def record(name):
        def hook(_module, _inputs, output):
            seen.setdefault(name, tuple(output.shape))

        return hook

    net.src_embed.register_forward_hook(record("embed"))
    net.encoder.layers[0].residual_attn.register_forward_hook(record("add_norm_attn"))
    net.encoder.layers[0].ffn.register_forward_hook(record("ffn"))
    with torch.inference_mode(), capture(net) as store:
        memory, _ = net.encode(ids)
    assert ids.shape == (B, L)
    assert seen["embed"] == (B, L, 512)
    layer0 = "encoder.layers.0.self_attn."
    assert store[layer0 + "hook_q"].shape == (B, 8, L, 64)
    assert store[layer0 + "hook_k"].shape == (B, 8, L, 64)
    assert store[layer0 + "hook_scores"].shape == (B, 8, L, L)
    assert store[layer0 + "hook_pattern"].shape == (B, 8, L, L)
    assert store[layer0 + "hook_z"].shape == (B, 8, L, 64)
    assert seen["add_norm_attn"] == (B, L, 512)
    assert seen["ffn"] == (B, L, 512)
    assert memory.shape == (B, L, 512)
    assert sum(k.endswith("hook_pattern") for k in store) == 6


def test_seed_default_layer_parameter_counts():
    cfg = TransformerConfig(src_vocab_size=10, n_decoder_layers=0, n_encoder_layers=1)
    layer = Transformer(cfg).encoder.layers[0]
    assert sum(p.numel() for p in layer.self_attn.parameters()) == 1_050_624  # "about 1.05 M"
    assert sum(p.numel() for p in layer.ffn.parameters()) == 2_099_712  # "about 2.1 M"


def test_post_norm_residual_output_is_layer_normalised():
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab_size=20, d_model=32, n_heads=4, n_encoder_layers=1,
                            n_decoder_layers=0, d_ff=64)
    net = Transformer(cfg).eval()
    memory, _ = net.encode(torch.randint(4, 20, (1, 5)))
    # LayerNorm(x + sublayer(x)) with default affine parameters: zero mean, unit variance
    torch.testing.assert_close(memory.mean(-1), torch.zeros(1, 5), atol=1e-5, rtol=0)
    torch.testing.assert_close(memory.var(-1, unbiased=False), torch.ones(1, 5), atol=1e-3,
                               rtol=0)


@pytest.mark.parametrize("family", ["encoder-only", "decoder-only", "encoder-decoder"])
def test_every_family_is_a_configuration_of_the_same_classes(family):
    layers = {"encoder-only": (2, 0), "decoder-only": (0, 2), "encoder-decoder": (2, 2)}[family]
    cfg = TransformerConfig(src_vocab_size=30, tgt_vocab_size=40, d_model=32, n_heads=4,
                            n_encoder_layers=layers[0], n_decoder_layers=layers[1], d_ff=64)
    net = Transformer(cfg).eval()
    assert cfg.family == family
    src = torch.randint(4, 30, (1, 5))
    tgt = torch.randint(4, 30, (1, 3))
    logits = net(src_ids=src, tgt_ids=src if family == "decoder-only" else tgt)
    expected = {"encoder-only": (1, 5, 30), "decoder-only": (1, 5, 40),
                "encoder-decoder": (1, 3, 40)}[family]
    assert logits.shape == expected
    has_cross = family == "encoder-decoder"
    if net.decoder is not None:
        assert (net.decoder.layers[0].cross_attn is not None) == has_cross


def test_config_rejects_inconsistent_sizes():
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="at least one"):
        TransformerConfig(n_encoder_layers=0, n_decoder_layers=0)
