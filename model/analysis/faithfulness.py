"""What attention moves, beside what it weighs: the first numbers of the "What moves" view, in
numpy from tensors a model's hooks give (the own models' ``hook_v`` and ``W_O``).

- :func:`without_sink`: a weight matrix with the sink's column left out and every row
  renormalised over the rest, and the mass that was left out of each row (the sink toggle);
- :func:`value_norms`: ‖v_j W_Oʰ‖, the norm of what key j would add to a query's output through
  head h, per head and key;
- :func:`weight_times_value_norm`: α_ij ‖v_j W_Oʰ‖ (Kobayashi et al. 2020, "Attention is not only
  a weight"): the norm of what key j actually adds to query i's output through head h.

Raw weights can mislead: a head may put most of a row's weight on a token whose transformed
value is nearly zero (the first token, punctuation) and so move almost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WithoutSink:
    """Weights renormalised with the sink left out.

    Attributes:
        weights: ``[..., query, key]`` each row divided by its mass outside the sink; the sink's
            column is NaN (not drawn, out of the colour scale); a row whose whole mass lay on
            the sink (a causal model's first row) is NaN throughout: it has nothing else to
            share.
        left_out: ``[..., query]`` the weight each row had on the sink.
        sink: the key position left out.
    """

    weights: np.ndarray
    left_out: np.ndarray
    sink: int


def without_sink(weights: np.ndarray, sink: int = 0) -> WithoutSink:
    """``weights [..., query, key]`` with key ``sink`` left out and each row renormalised over
    the other keys: ``w'_ij = w_ij / (1 − w_i,sink)`` for j ≠ sink.

    Raises:
        ValueError: fewer than two dimensions, or ``sink`` outside the keys.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim < 2:
        raise ValueError(f"weights need a query and a key axis, not shape {w.shape}")
    if not 0 <= sink < w.shape[-1]:
        raise ValueError(f"the sink must be a key position 0..{w.shape[-1] - 1}, not {sink}")
    left_out = w[..., sink].copy()
    others = w.copy()
    others[..., sink] = 0.0
    total = others.sum(axis=-1)  # what the row holds outside the sink: 1 − left_out
    with np.errstate(invalid="ignore", divide="ignore"):
        renormalised = np.where(total[..., None] > 0, others / total[..., None], np.nan)
    renormalised[..., sink] = np.nan
    return WithoutSink(renormalised, left_out, sink)


def value_norms(values: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """‖v_jʰ W_Oʰ‖ for every head h and key j.

    Args:
        values: ``[head, key, d_head]`` the value vectors each head reads (``hook_v``).
        w_o: ``[d_model, heads × d_head]`` the output projection's weight as ``nn.Linear``
            keeps it (``out × in``); head h's slice is its columns ``h·d_head .. (h+1)·d_head``.

    Returns:
        float64 ``[head, key]``: the norm of key j's value after the output projection, the
        vector it adds to a query's output per unit of weight (W_O's bias is added once per
        query, whatever the weights: it moves nothing from any key).

    Raises:
        ValueError: shapes that do not fit together.
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(w_o, dtype=np.float64)
    if v.ndim != 3 or w.ndim != 2 or w.shape[1] != v.shape[0] * v.shape[2]:
        raise ValueError(f"values {v.shape} ([head, key, d_head]) and W_O {w.shape} "
                         "([d_model, heads × d_head]) do not fit")
    heads, _keys, d_head = v.shape
    slices = w.reshape(w.shape[0], heads, d_head).transpose(1, 2, 0)  # [head, d_head, d_model]
    return np.linalg.norm(np.einsum("hkd,hdm->hkm", v, slices), axis=-1)


def weight_times_value_norm(weights: np.ndarray, values: np.ndarray,
                            w_o: np.ndarray) -> np.ndarray:
    """α_ij ‖v_jʰ W_Oʰ‖: ``weights [head, query, key]`` scaled by :func:`value_norms`.

    Returns:
        float64 ``[head, query, key]``; a row's sum is not 1 (it is a norm, not a share): a
        view draws each row on its own scale or divides it by its sum.
    """
    w = np.asarray(weights, dtype=np.float64)
    norms = value_norms(values, w_o)
    if w.ndim != 3 or w.shape[0] != norms.shape[0] or w.shape[2] != norms.shape[1]:
        raise ValueError(f"weights {w.shape} do not fit values of {norms.shape[0]} heads and "
                         f"{norms.shape[1]} keys")
    return w * norms[:, None, :]
