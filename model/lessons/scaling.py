"""The numbers of the lesson §4.4: why the scores are divided by √d_k (softmax saturation).

§4.4 argues that q·k of random unit-variance vectors has a spread of √d_k, that large scores
push softmax to one-hot, and that a one-hot softmax has almost no gradient:
:func:`dot_products`, :func:`spread_by_width`, :func:`two_scores`,
:func:`gradient_by_width` and :func:`trace_scaling` measure each claim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from i18n import _

D_K_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SEED_SCORES = (8.0, -3.0)  # §4.4: scores of the size d_k = 64 gives them (spread 8)
SAMPLES = 4000  # pairs q, k for the histogram of one d_k
WIDTH_SAMPLES = 2000  # pairs per d_k for the spread over every d_k


def dot_products(d_k: int, n: int = SAMPLES, seed: int = 0) -> np.ndarray:
    """q·k for ``n`` pairs of random vectors of ``d_k`` independent entries of mean 0 and
    variance 1 (a seeded generator: the same numbers every time).

    Returns:
        ``[n]`` float64 dot products; their standard deviation is about √d_k.
    """
    if d_k < 1 or n < 2:
        raise ValueError(f"d_k={d_k} and n={n} must be positive (n at least 2)")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k), dtype=np.float32)  # [pair, d_k]
    k = rng.standard_normal((n, d_k), dtype=np.float32)  # [pair, d_k]
    return np.einsum("nd,nd->n", q, k).astype(np.float64)


def spread_by_width(widths: Sequence[int] = D_K_CHOICES, n: int = WIDTH_SAMPLES,
                    seed: int = 0) -> np.ndarray:
    """The measured standard deviation of q·k for each d_k in ``widths``: ``[len(widths)]``."""
    return np.array([dot_products(d, n, seed + i).std() for i, d in enumerate(widths)])


def softmax(x) -> np.ndarray:
    """The softmax of the last axis, computed stably (the largest value subtracted first); −∞
    gets weight 0, and a row of nothing but −∞ is all 0."""
    x = np.asarray(x, dtype=np.float64)
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def softmax_jacobian(p) -> np.ndarray:
    """∂p_i/∂s_j = p_i (δ_ij − p_j) of ``p = softmax(s)``, for ``p`` ``[..., n]``:
    ``[..., n, n]``."""
    p = np.asarray(p, dtype=np.float64)
    return p[..., :, None] * (np.eye(p.shape[-1]) - p[..., None, :])


def gradient_size(p) -> np.ndarray:
    """The size of softmax's gradient at ``p``: the Frobenius norm of its Jacobian, per row."""
    return np.linalg.norm(softmax_jacobian(p), axis=(-2, -1))


@dataclass(frozen=True)
class Saturation:
    """Softmax of some scores without and with ÷√d_k, and the size of its gradient.

    Args:
        scores: ``[n]`` the raw scores.
        sqrt_dk: √d_k.
        exps: ``[n]`` e to the power of each raw score.
        raw: ``[n]`` softmax(scores).
        scaled_scores: ``[n]`` scores / √d_k.
        scaled: ``[n]`` softmax(scores / √d_k).
        raw_gradient, scaled_gradient: the gradient's size (:func:`gradient_size`) at each.
    """

    scores: np.ndarray
    sqrt_dk: float
    exps: np.ndarray
    raw: np.ndarray
    scaled_scores: np.ndarray
    scaled: np.ndarray
    raw_gradient: float
    scaled_gradient: float


def two_scores(scores: Sequence[float], d_k: int) -> Saturation:
    """§4.4's example: softmax of ``scores`` as they are and divided by √d_k."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size < 2 or not np.isfinite(scores).all():
        raise ValueError(_("Give at least two finite scores."))
    if d_k < 1:
        raise ValueError(f"d_k={d_k} must be positive")
    sqrt_dk = math.sqrt(d_k)
    raw, scaled = softmax(scores), softmax(scores / sqrt_dk)
    with np.errstate(over="ignore"):
        exps = np.exp(scores)
    return Saturation(scores, sqrt_dk, exps, raw, scores / sqrt_dk, scaled,
                      float(gradient_size(raw)), float(gradient_size(scaled)))


def gradient_by_width(widths: Sequence[int] = D_K_CHOICES, n_keys: int = 8, rows: int = 400,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The mean size of softmax's gradient over rows of ``n_keys`` scores q·k of random
    unit-variance vectors, without and with ÷√d_k, for each d_k in ``widths``.

    Returns:
        ``(without [len(widths)], with [len(widths)])``.
    """
    rng = np.random.default_rng(seed)
    without, with_ = [], []
    for d_k in widths:
        q = rng.standard_normal((rows, 1, d_k), dtype=np.float32)  # [row, 1, d_k]
        k = rng.standard_normal((rows, n_keys, d_k), dtype=np.float32)  # [row, key, d_k]
        scores = (q * k).sum(-1).astype(np.float64)  # [row, key]
        without.append(gradient_size(softmax(scores)).mean())
        with_.append(gradient_size(softmax(scores / math.sqrt(d_k))).mean())
    return np.array(without), np.array(with_)


@dataclass(frozen=True)
class TraceScaling:
    """One head's scores of a real run, before and after ÷√d_k, and softmax of both.

    Args:
        raw: ``[query, key]`` Q·Kᵀ before the division (masked cells NaN).
        scaled: ``[query, key]`` Q·Kᵀ/√d_head, what the model uses (masked cells NaN).
        sqrt_dk: √d_head.
        raw_weights: ``[query, key]`` softmax of ``raw`` (masked cells 0): without scaling.
        weights: ``[query, key]`` the model's own weights.
        raw_spread, scaled_spread: the standard deviation of the allowed scores.
        raw_peak, peak: the mean of each row's largest weight, without and with scaling.
    """

    raw: np.ndarray
    scaled: np.ndarray
    sqrt_dk: float
    raw_weights: np.ndarray
    weights: np.ndarray
    raw_spread: float
    scaled_spread: float
    raw_peak: float
    peak: float


def trace_scaling(trace, name: str, layer: int, head: int) -> TraceScaling:
    """A traced head's scores (the trace keeps Q·Kᵀ/√d_head) multiplied back by √d_head, and
    softmax with and without the division.

    Args:
        trace: an :class:`~model.trace.AttentionTrace` that keeps scores and the model's sizes.
    """
    dims = trace.dims
    if dims is None:
        raise ValueError(_("This trace does not record the width of a head (d_k)."))
    sqrt_dk = math.sqrt(dims.d_head)
    allowed = trace.mask(name, layer)  # [query, key]
    scaled = np.where(allowed, trace.scores(name, layer, head).astype(np.float64), np.nan)
    raw = scaled * sqrt_dk
    raw_weights = softmax(np.where(allowed, raw, -np.inf))
    weights = np.asarray(trace.weights(name, layer, head), dtype=np.float64)
    return TraceScaling(raw, scaled, sqrt_dk, raw_weights, weights,
                        float(np.nanstd(raw)), float(np.nanstd(scaled)),
                        float(raw_weights.max(axis=-1).mean()),
                        float(weights.max(axis=-1).mean()))
