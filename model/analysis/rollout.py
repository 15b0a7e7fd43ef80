"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack.

Average the heads of each layer, add the identity for the residual connection, renormalise the
rows, and multiply through the layers. It is a rough picture of how information flows, not an
explanation of a decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis.cuts import FIT_ABOVE
from model.analysis.statistics import ROLLOUT_SIDE, layer_summaries
from model.reading.blocks import LayerSummary, factors
from model.trace import AttentionTrace


def rollout(trace: AttentionTrace, name: str, residual: float = 0.5,
            summaries: Sequence[LayerSummary] | None = None) -> np.ndarray:
    """Attention rollout through every layer of a self-attention stack.

    Exact up to :data:`~model.analysis.statistics.ROLLOUT_SIDE` tokens. A longer input rolls
    out blocks of tokens instead (:func:`rollout_factor` tokens each): each layer's mean
    over heads is pooled first (a block's rows averaged, its keys summed, so rows still sum
    to 1) and the pooled layers are multiplied, an approximation of pooling the exact
    rollout that keeps the cost of a layer bounded.

    Args:
        trace: the trace.
        name: ``encoder.self`` or ``decoder.self``.
        residual: weight of the identity added for the residual stream (0.5 in the paper).
        summaries: the layers' summaries when already made (one per layer, in order); else
            they are made with the smallest tiles and grid (the rollout reads only the mean).

    Returns:
        float64 ``[layer, query, key]`` (blocks of tokens for a long input): entry l is the
        rollout through layers 0..l.
    """
    if not name.endswith(".self"):
        raise ValueError(f"rollout follows one token stream; {name} is cross-attention")
    if summaries is None:
        summaries = layer_summaries(trace, name, tile=1, grid=1)
    n = summaries[0].mean.shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    result = eye
    out = np.empty((len(summaries), n, n))
    for layer, summary in enumerate(summaries):
        mixed = residual * eye + (1 - residual) * torch.from_numpy(
            np.asarray(summary.mean, dtype=np.float64))
        mixed /= mixed.sum(dim=-1, keepdim=True)
        result = mixed @ result
        out[layer] = result.numpy()
    return out


def rollout_factor(n_tokens: int) -> int:
    """Tokens per block of :func:`rollout` for an input of ``n_tokens`` (1: exact)."""
    return factors(n_tokens, n_tokens, ROLLOUT_SIDE)[0]


SINK_SHARE = 0.5  # a first-token column holding more than this much of the weight hides the rest


def first_token_share(flow: np.ndarray) -> float:
    """The mean weight a ``[query, key]`` matrix puts on the first key (an attention sink)."""
    return float(np.asarray(flow)[:, 0].mean())


def off_diagonal_peak(flow: np.ndarray, key_offset: int = 0) -> float:
    """The largest weight of a ``[query, key]`` rollout off its diagonal (the residual keeps
    each token's own share large; fitting colours to the rest shows where information moved).

    Args:
        key_offset: the position of the first column (1 once the first token is left out).
    """
    flow = np.asarray(flow, dtype=np.float64)
    q, k = np.indices(flow.shape)
    rest = np.where(q == k + key_offset, -np.inf, flow)
    peak = float(rest.max()) if rest.size else 0.0
    return max(peak, 1e-6)


def without_first_token(flow: np.ndarray) -> np.ndarray:
    """``[query, key]`` without the first key's column, each row rescaled to sum to 1 over the
    remaining keys (a row with nothing left is all zeros): what the rest of the attention
    looks like once the sink is set aside.

    Returns:
        float64 ``[query, key - 1]``.
    """
    rest = np.asarray(flow, dtype=np.float64)[:, 1:]
    total = rest.sum(axis=-1, keepdims=True)
    return np.divide(rest, total, out=np.zeros_like(rest), where=total > 0)


@dataclass(frozen=True)
class RolloutView:
    """One layer of a rollout as the page draws it.

    Attributes:
        flow: ``[query, key]``, or blocks of ``factor`` tokens a side (without the first key,
            or first block, when it was left out).
        allowed: the mask per token, cut like ``flow``.
        key_tokens, key_special: the key tokens drawn and the special ones among them (none
            when ``flow`` is in blocks: block labels name ranges, not tokens).
        sink_share: the first key's (block's) mean weight before anything was left out.
        left_out: whether the first key (block) was left out (rows rescaled).
        zmax: the weight drawn darkest (1, or fitted off the diagonal for long inputs).
        factor: tokens a side of each cell of ``flow`` (:func:`rollout_factor`).
    """

    flow: np.ndarray
    allowed: np.ndarray
    key_tokens: list[str]
    key_special: list[int]
    sink_share: float
    left_out: bool
    zmax: float
    factor: int = 1

    @property
    def first_key(self) -> int:
        """The token of the first key drawn (the tokens before it were left out)."""
        return self.factor if self.left_out else 0


def rollout_view(flow: np.ndarray, allowed: np.ndarray, key_tokens, key_special,
                 first: str = "auto", fit_above: int = FIT_ABOVE,
                 factor: int = 1) -> RolloutView:
    """Cut one layer's rollout for drawing.

    Args:
        flow: one layer of :func:`rollout`, ``[query, key]`` or, for a long input, blocks of
            ``factor`` tokens a side.
        allowed, key_tokens, key_special: the mask ``[query, key]``, the key tokens and the
            positions of special ones, per token.
        first: ``"keep"`` the first key, ``"leave out"`` its column (rows rescaled), or
            ``"auto"``: leave it out when it holds more than :data:`SINK_SHARE` of the weight.
        fit_above: past this many keys (blocks), colours are fitted to the largest weight off
            the diagonal.
        factor: tokens a side of each cell of ``flow`` (:func:`rollout_factor`).
    """
    if first not in ("auto", "keep", "leave out"):
        raise ValueError(f"first must be 'auto', 'keep' or 'leave out', not {first!r}")
    share = first_token_share(flow)
    key_tokens = list(key_tokens)
    key_special = list(key_special) if factor == 1 else []
    leave_out = np.shape(flow)[1] > 1 and (
        first == "leave out" or (first == "auto" and share > SINK_SHARE))
    if leave_out:  # the first key, or the first block of keys
        flow, allowed = without_first_token(flow), np.asarray(allowed)[:, factor:]
        key_tokens, key_special = key_tokens[factor:], [p - 1 for p in key_special if p > 0]
    zmax = 1.0
    if np.shape(flow)[1] > fit_above:  # long inputs: fit the colours to what moved
        zmax = off_diagonal_peak(flow, key_offset=1 if leave_out else 0)
    return RolloutView(np.asarray(flow), np.asarray(allowed), key_tokens, key_special, share,
                       leave_out, zmax, factor)
