"""Rollout, head statistics and spans against direct computations and hand-built heads."""

from __future__ import annotations

import numpy as np
import pytest

from model import AttentionTrace
from model.analysis import aggregate, head_stats, rollout, span_attention

N = 6


def _trace(*heads: np.ndarray, layers: int = 1) -> AttentionTrace:
    stack = np.stack([np.stack(heads)] * layers).astype(np.float32)  # [layer, head, q, k]
    return AttentionTrace(model="hand", family="decoder-only", attention={"decoder.self": stack},
                          n_heads=len(heads), n_kv_heads=len(heads),
                          tokens=[f"t{i}" for i in range(N)], ids=range(N))


def previous_token_head() -> np.ndarray:
    w = np.zeros((N, N))
    w[0, 0] = 1
    w[np.arange(1, N), np.arange(N - 1)] = 1
    return w


def first_token_head() -> np.ndarray:
    w = np.zeros((N, N))
    w[:, 0] = 1
    return w


def uniform_causal_head() -> np.ndarray:
    w = np.tril(np.ones((N, N)))
    return w / w.sum(-1, keepdims=True)


def test_statistics_take_their_extreme_values_on_hand_built_heads():
    stats = head_stats(_trace(previous_token_head(), first_token_head(), uniform_causal_head()),
                       "decoder.self")
    prev, first, uniform = 0, 1, 2
    assert stats["previous_token"][0, prev] == pytest.approx(1.0)
    assert stats["entropy"][0, prev] == pytest.approx(0.0)
    assert stats["distance"][0, prev] == pytest.approx((N - 1) / N)  # 1 for all but the first
    assert stats["first_token"][0, first] == pytest.approx(1.0)
    assert stats["entropy"][0, first] == pytest.approx(0.0)
    assert stats["distance"][0, first] == pytest.approx(np.arange(N).mean())
    assert stats["self"][0, first] == pytest.approx(1 / N)
    expected_entropy = np.mean([np.log(i + 1) for i in range(N)])
    assert stats["entropy"][0, uniform] == pytest.approx(expected_entropy)
    assert stats["entropy"][0, uniform] == stats["entropy"].max()  # the most spread-out head
    assert stats["previous_token"][0, first] < stats["previous_token"][0, prev]


def test_rollout_equals_the_formula_computed_directly():
    rng = np.random.default_rng(0)
    layers = []
    for _ in range(3):
        heads = np.tril(rng.random((2, N, N)))
        layers.append(heads / heads.sum(-1, keepdims=True))
    stack = np.stack(layers).astype(np.float32)
    trace = AttentionTrace(model="r", family="decoder-only", attention={"decoder.self": stack},
                           n_heads=2, n_kv_heads=2, tokens=list("abcdef"), ids=range(N))
    expected = np.eye(N)
    for layer in range(3):
        a = 0.5 * stack[layer].astype(np.float64).mean(0) + 0.5 * np.eye(N)
        a = a / a.sum(-1, keepdims=True)
        expected = a @ expected
    result = rollout(trace, "decoder.self")
    np.testing.assert_allclose(result[-1], expected, atol=1e-6)
    np.testing.assert_allclose(result[-1].sum(-1), 1.0, atol=1e-9)
    with pytest.raises(ValueError, match="cross-attention"):
        rollout(trace, "decoder.cross")


def test_aggregate_and_span_attention(seed_trace):
    mean = aggregate(seed_trace, "encoder.self", layers=[0, 1], heads=[2, 3])
    direct = np.mean([seed_trace.weights("encoder.self", i, h) for i in (0, 1) for h in (2, 3)],
                     axis=0)
    np.testing.assert_allclose(mean, direct, atol=1e-7)
    block, mass = span_attention(mean, (3, 6), (0, 3))  # "on the mat" -> "The cat sat"
    assert block.shape == (3, 3)
    assert mass == pytest.approx(mean[3:6, 0:3].sum(-1).mean())
    with pytest.raises(ValueError, match="do not fit"):
        span_attention(mean, (0, 7), (0, 1))
    with pytest.raises(ValueError, match="at least one"):
        aggregate(seed_trace, "encoder.self", layers=[], heads=[0])
