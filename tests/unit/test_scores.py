"""Scores before softmax and the masked scores of the causal-mask view (seed 3.4 step 2a)."""

from __future__ import annotations

import numpy as np
import pytest

from model.hf import HFModel
from tests.helpers import SEED_SENTENCE


def _softmax(x: np.ndarray) -> np.ndarray:
    top = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - top)
    return e / e.sum(-1, keepdims=True)


def test_own_model_masked_scores_are_minus_infinity_exactly_above_the_diagonal(seed_trace):
    for layer in (0, 5):
        masked = seed_trace.masked_scores("decoder.self", layer, 3)
        forbidden = np.triu(np.ones(masked.shape, dtype=bool), k=1)
        assert np.isneginf(masked[forbidden]).all()
        assert np.isfinite(masked[~forbidden]).all()
        np.testing.assert_allclose(_softmax(masked), seed_trace.weights("decoder.self", layer, 3),
                                   atol=1e-6)
    raw = seed_trace.scores("decoder.self", 0, 3)
    assert np.isfinite(raw).all()  # before the mask every score exists
    assert np.isfinite(seed_trace.masked_scores("encoder.self", 2, 1)).all()


def test_sliding_window_masked_scores_follow_the_models_own_mask(tiny_checkpoints):
    path = tiny_checkpoints["mistral"]
    trace = HFModel.load(str(path), device="cpu").trace(
        "A dog slept under the table yesterday because it was tired.")
    n = len(trace.tokens)
    q, k = np.indices((n, n))
    forbidden = (k > q) | (q - k >= 4)  # causal and a window of 4
    for layer in range(2):
        masked = trace.masked_scores("decoder.self", layer, 1)
        assert np.isneginf(masked[forbidden]).all()
        assert np.isfinite(masked[~forbidden]).all()
        np.testing.assert_allclose(_softmax(masked), trace.weights("decoder.self", layer, 1),
                                   atol=1e-6)


def test_an_exported_trace_explains_that_it_has_no_scores(seed_trace, tmp_path):
    from model import AttentionTrace

    loaded = AttentionTrace.load(seed_trace.save(tmp_path / "t.npz"))
    with pytest.raises(ValueError, match="holds no scores"):
        loaded.scores("decoder.self", 0, 0)


def test_translator_records_scores_too():
    from model import load

    trace = load("own-translator", device="cpu").trace(SEED_SENTENCE)
    masked = trace.masked_scores("decoder.self", 2, 0)
    np.testing.assert_allclose(_softmax(masked), trace.weights("decoder.self", 2, 0), atol=1e-6)
