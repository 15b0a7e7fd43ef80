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


@dataclass(frozen=True)
class AttentionParts:
    """What a model's attention computes beyond its weights, for one sentence: the tensors the
    "What moves" view reads (from the own models' hook points, or a Hugging Face model's
    attention calls and output projections).

    Attributes:
        trace: the trace of the same pass (its weights).
        target: the target text traced (an encoder-decoder's own translation when none was
            given), so that later passes read the same tokens; None for one stack.
        values: per kind, per layer ``[head, key, d_head]`` each query head's value vectors
            (grouped-query heads share theirs: repeated per query head).
        w_o: per kind, per layer ``[d_model, heads × d_head]`` the output projection as
            ``nn.Linear`` keeps it (out × in).
        queries: per kind, per layer ``[head, query, d_head]`` as the scores read them (after
            RoPE where the model rotates).
        keys: per kind, per layer ``[kv_head, key, d_head]``, one per K/V head.
    """

    trace: object
    target: str | None
    values: dict[str, list[np.ndarray]]
    w_o: dict[str, list[np.ndarray]]
    queries: dict[str, list[np.ndarray]]
    keys: dict[str, list[np.ndarray]]


@dataclass(frozen=True)
class Ablation:
    """What leaving some heads out of one layer did to a model's output.

    Attributes:
        heads: the heads left out.
        change: how much the output moved (0: nothing): for a model that writes, the total
            variation distance ½ Σ |p − p'| of the next-token distributions (at the last
            position; an encoder-decoder's averaged over the positions of its own
            translation, teacher-forced); for an encoder, the mean over tokens of
            1 − cos(final hidden state, the same ablated).
        measure: ``"next token"``, ``"translation"`` or ``"hidden states"``.
        before, after: what the model writes without and with the heads (its most probable
            next token, or its greedy translation); ``""`` for an encoder.
    """

    heads: tuple[int, ...]
    change: float
    measure: str
    before: str
    after: str


def ablation_outcome(family: str, heads, before: np.ndarray, after: np.ndarray,
                     written_before: str = "", written_after: str = "") -> Ablation:
    """The :class:`Ablation` of ``heads`` from what the model gave without and with them:
    an encoder's final hidden states (``family`` ``"encoder-only"``: mean 1 − cos), else the
    next-token distributions it writes (total variation) and what it wrote."""
    heads = tuple(int(h) for h in heads)
    if family == "encoder-only":
        return Ablation(heads, float(cosine_distance(before, after).mean()), "hidden states",
                        "", "")
    measure = "next token" if family == "decoder-only" else "translation"
    return Ablation(heads, total_variation(before, after), measure, written_before,
                    written_after)


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """½ Σ |p − q| over the last axis, averaged over the others: 0 equal, 1 disjoint."""
    return float(0.5 * np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)
                              ).sum(axis=-1).mean())


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 − cos(a, b) along the last axis (0 where either is zero), never below 0."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    cos = np.divide((a * b).sum(axis=-1), norms, out=np.ones_like(norms), where=norms > 0)
    return np.clip(1.0 - cos, 0.0, None)


def row_normalised(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (a row summing to 0 stays 0)."""
    m = np.asarray(matrix, np.float64)
    sums = m.sum(axis=-1, keepdims=True)
    return np.divide(m, sums, out=np.zeros_like(m), where=sums > 0)


ROUNDING_DISTANCE = 1e-9  # 1 − cos between float32 vectors equal to about 4 parts in 10⁵


def value_zeroing_scores(base: np.ndarray, zeroed: np.ndarray) -> np.ndarray:
    """Value zeroing (Mohebbi et al. 2023) from a layer's outputs: ``base [query, d_model]``
    unchanged, ``zeroed [key, query, d_model]`` with key j's value zeroed; returns ``[query,
    key]`` 1 − cos per query, each row normalised to sum to 1. A distance below
    :data:`ROUNDING_DISTANCE` counts as 0: the passes run as one batch in float32, whose rows
    may round differently by a few parts in a million (1 − cos ≈ 1e-11) when nothing changed."""
    distance = cosine_distance(np.asarray(zeroed)[:, :, :], np.asarray(base)[None]).T
    return row_normalised(np.where(distance < ROUNDING_DISTANCE, 0.0, distance))


def layer_contributions(weights: np.ndarray, values: np.ndarray, w_o: np.ndarray
                        ) -> np.ndarray:
    """‖Σ_h α_ijʰ v_jʰ W_Oʰ‖: the norm of what key j adds to query i's output through the whole
    layer (every head's share summed before the norm), ``[query, key]``."""
    w = np.asarray(weights, np.float64)
    v = np.asarray(values, np.float64)
    o = np.asarray(w_o, np.float64)
    heads, _keys, d_head = v.shape
    moved = np.einsum("hkd,mhd->hkm", v, o.reshape(o.shape[0], heads, d_head))  # [h, key, d]
    return np.linalg.norm(np.einsum("hqk,hkm->qkm", w, moved), axis=-1)


def norm_rollout(contributions: list[np.ndarray], residual: float = 0.5) -> np.ndarray:
    """Rollout (Abnar & Zuidema 2020) of norm-based contributions: each layer's
    :func:`layer_contributions` row-normalised, mixed with the identity for the residual
    stream (``residual`` · I + (1 − residual) · C), multiplied through the layers.

    Returns:
        ``[layer, query, key]``: entry l through layers 0..l; every row sums to 1.
    """
    n = contributions[0].shape[0]
    eye = np.eye(n)
    result = eye
    out = np.empty((len(contributions), n, n))
    for layer, c in enumerate(contributions):
        if c.shape != (n, n):
            raise ValueError(f"rollout follows one token stream: layer {layer} is {c.shape}")
        mixed = row_normalised(residual * eye + (1 - residual) * row_normalised(c))
        result = mixed @ result
        out[layer] = result
    return out


@dataclass(frozen=True)
class SinkView:
    """Weights as the sink toggle draws them (:func:`sink_left_out`).

    Attributes:
        weights: ``[..., query, key]`` each row renormalised over what is left.
        left_out: ``[..., query]`` the mass each row had on the sink.
        learned: the sink is a learned logit (no token): rows were divided by their sums;
            else the first token's column was left out (NaN).
    """

    weights: np.ndarray
    left_out: np.ndarray
    learned: bool


LEARNED_SINK_SHORTFALL = 1e-3  # rows summing short of 1 by more: a learned sink took the rest


def sink_left_out(weights: np.ndarray, allowed: np.ndarray | None = None) -> SinkView:
    """The sink toggle's recipe. Where rows sum to 1, the first token is the sink: its column is
    left out and each row renormalised, ``w'_ij = w_ij / (1 − w_i0)`` (:func:`without_sink`).
    Where rows sum short of 1 (a model with learned sinks, which take weight and give no
    value), the learned sink is left out instead: each row divided by its sum.

    A row with nothing left (a causal model's first row) is NaN: it has nothing to share.
    """
    w = np.asarray(weights, dtype=np.float64)
    sums = np.nansum(w, axis=-1)
    live = sums > 0 if allowed is None else np.broadcast_to(
        np.asarray(allowed, bool).any(axis=-1), sums.shape)
    if np.any(live) and float((1.0 - sums[live]).max()) > LEARNED_SINK_SHORTFALL:
        with np.errstate(invalid="ignore", divide="ignore"):
            renormalised = np.where(sums[..., None] > 0, w / sums[..., None], np.nan)
        return SinkView(renormalised, np.where(live, 1.0 - sums, 0.0), True)
    found = without_sink(w, sink=0)
    return SinkView(found.weights, found.left_out, False)
