"""Attention read in row blocks, with torch, on the device where the model ran.

A store (:class:`model.store.AttentionStore`) hands out a layer's weights as a sequence of
:class:`Block`: a few query rows of the chosen heads at a time, ``[head, rows, keys]`` float32
on the store's device, so that no more than :data:`BLOCK_BYTES` of weights exist at once
whatever the length of the input. Every reader here consumes such blocks:

- :func:`assemble`: the exact weights (a head, a layer, a region) as numpy;
- :func:`pool`: blocks of tokens, rows averaged over a block's queries and keys summed over a
  block's keys (as :func:`viz.pooling.pool_weights`), so a pooled row still sums to 1;
- :func:`summarise`: one pass over every head of a layer that yields what the analyses need
  (:class:`LayerSummary`: the head statistics, small tiles, a coarser grid of every head, the
  heads' mean for rollout and the colour ceiling of Explore).

A causal block stops at the last key any of its rows may see: the masked rest is exactly 0
and is neither computed nor stored.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from .store import BLOCK_BYTES, Block, readonly, row_slices, rows_per_block

__all__ = ["BLOCK_BYTES", "Block", "LayerSummary", "assemble", "factors", "pool", "row_slices",
           "rows_per_block", "softmax_rows", "summarise"]


def _tensor(weights) -> torch.Tensor:
    """A block's weights as a tensor (a numpy block of a store that holds its weights is
    shared, not copied; it is never written)."""
    if isinstance(weights, torch.Tensor):
        return weights
    with warnings.catch_warnings():  # torch warns of read-only arrays
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(np.asarray(weights))


def assemble(blocks: Iterable[Block], heads: int, rows: range, n_keys: int,
             keys: range | None = None) -> np.ndarray:
    """The exact weights the blocks hold: float32 ``[head, len(rows), len(keys)]`` (numpy).

    Args:
        blocks: blocks covering ``rows`` in order.
        heads: how many heads each block holds.
        rows: the query rows covered.
        n_keys: the keys of the attention kind.
        keys: the keys kept (default all; a range of step 1).
    """
    keys = range(n_keys) if keys is None else keys
    out = np.zeros((heads, len(rows), len(keys)), dtype=np.float32)
    for block in blocks:
        w = _tensor(block.weights)[..., keys.start:keys.stop]
        out[:, block.start - rows.start:block.stop - rows.start, :w.shape[-1]] = w.cpu().numpy()
    return out


def key_sums(w: torch.Tensor, fk: int) -> torch.Tensor:
    """``[..., keys]`` summed over consecutive groups of ``fk`` keys (the last group may be
    shorter): ``[..., ceil(keys / fk)]``, without copying the input."""
    if fk == 1:
        return w
    ke = w.shape[-1]
    full = ke - ke % fk
    rest = w[..., full:].sum(-1, keepdim=True)
    if not full:
        return rest
    sums = w[..., :full].unfold(-1, fk, fk).sum(-1)
    return torch.cat([sums, rest], dim=-1) if full < ke else sums


class _Pooler:
    """Accumulates blocks into ``[head, ceil(n_q / fq), ceil(n_k / fk)]`` pooled weights."""

    def __init__(self, heads: int, n_q: int, n_k: int, fq: int, fk: int, device):
        self.fq, self.fk, self.n_q = fq, fk, n_q
        self.sums = torch.zeros((heads, math.ceil(n_q / fq), math.ceil(n_k / fk)),
                                dtype=torch.float64, device=device)

    def add(self, start: int, keyed: torch.Tensor) -> None:
        """Add rows ``start…`` whose keys are already summed in groups of ``fk``:
        ``[head, rows, key groups]``."""
        rows = torch.arange(start, start + keyed.shape[-2], device=keyed.device) // self.fq
        self.sums[..., :keyed.shape[-1]].index_add_(-2, rows, keyed.to(torch.float64))

    def result(self) -> np.ndarray:
        counts = np.minimum(self.fq, self.n_q - np.arange(self.sums.shape[-2]) * self.fq)
        return self.sums.cpu().numpy() / counts[:, None]


def pool(blocks: Iterable[Block], heads: int, n_q: int, n_k: int, fq: int, fk: int,
         device=None) -> np.ndarray:
    """Blocks of ``fq`` queries × ``fk`` keys: each pooled row averages a block's query rows,
    each pooled cell sums the block's keys, so pooled rows sum to 1 as the rows do.

    Returns:
        float64 ``[head, ceil(n_q / fq), ceil(n_k / fk)]``, equal to
        :func:`viz.pooling.pool_weights` of the exact weights.
    """
    pooler = None
    for block in blocks:
        w = _tensor(block.weights)
        if pooler is None:
            pooler = _Pooler(heads, n_q, n_k, fq, fk, w.device)
        pooler.add(block.start, key_sums(w, fk))
    if pooler is None:
        pooler = _Pooler(heads, n_q, n_k, fq, fk, device)
    return pooler.result()


@dataclass(frozen=True)
class LayerSummary:
    """What the analyses need of one layer, from one pass over its heads (numpy).

    Attributes:
        stats: per statistic of :data:`model.analysis.statistics.STATS`, float64 ``[head]``
            (NaN where it is undefined: distances, previous token and self for
            cross-attention).
        tiles: every head pooled to at most ``tile`` × ``tile`` cells (the model view):
            float64 ``[head, tq, tk]``; ``tile_factors`` are its tokens per block (multiples
            of ``mean_factors``, so that keys are summed once).
        grid: every head pooled to at most ``grid`` cells a side (Explore's heads):
            float64 ``[head, gq, gk]``; ``grid_factors`` likewise.
        mean: the heads' mean, pooled to at most ``mean_side`` a side (exact up to it):
            float32 ``[mq, mk]``; ``mean_factors`` likewise.
        peak: the largest weight away from the first query row and first key column (the
            colour ceiling of a fitted layer).
    """

    stats: dict[str, np.ndarray]
    tiles: np.ndarray
    tile_factors: tuple[int, int]
    grid: np.ndarray
    grid_factors: tuple[int, int]
    mean: np.ndarray
    mean_factors: tuple[int, int]
    peak: float


def factors(n_q: int, n_k: int, side: int) -> tuple[int, int]:
    """Tokens per block so that ``n_q`` × ``n_k`` fit ``side`` × ``side`` blocks."""
    return max(1, math.ceil(n_q / side)), max(1, math.ceil(n_k / side))


def summarise(blocks: Iterable[Block], heads: int, n_q: int, n_k: int, same_axis: bool, *,
              tile: int = 16, grid: int = 64, mean_side: int = 1024,
              device=None) -> LayerSummary:
    """One pass over a layer's blocks (every head) for :class:`LayerSummary`.

    The statistics are the means over query rows of: the entropy of the row (nats); its
    weight on the first key; and for self-attention (``same_axis``) the weighted distance
    ``Σ w·|q − k|``, the weight on the query itself and on the token before it (this one over
    rows 1…).
    """
    f_mean = factors(n_q, n_k, mean_side)
    # the coarser pools are multiples of the finest, so keys are summed once per block
    f_tile, f_grid = (tuple(f * factor for f, factor in zip(
        f_mean, factors(-(-n_q // f_mean[0]), -(-n_k // f_mean[1]), side))) for side in (tile, grid))
    sums = {key: torch.zeros(heads, dtype=torch.float64, device=device)
            for key in ("entropy", "first_token", "distance", "self", "previous_token")}
    poolers = peak = top = None
    for block in blocks:
        w = _tensor(block.weights)  # [head, rows, keys]
        if poolers is None:
            dev = w.device
            poolers = [_Pooler(heads, n_q, n_k, *f, dev) for f in (f_tile, f_grid)]
            poolers.append(_Pooler(1, n_q, n_k, *f_mean, dev))
            sums = {key: value.to(dev) for key, value in sums.items()}
            peak = torch.zeros((), dtype=torch.float32, device=dev)
            top = torch.zeros((), dtype=torch.float32, device=dev)
        rows, ke = w.shape[1], w.shape[2]
        sums["entropy"] -= torch.special.xlogy(w, w).sum(-1).sum(-1, dtype=torch.float64)
        sums["first_token"] += w[..., 0].sum(-1, dtype=torch.float64)
        if same_axis:
            q = torch.arange(block.start, block.stop, device=w.device, dtype=torch.float32)
            k = torch.arange(ke, device=w.device, dtype=torch.float32)
            distance = (q[:, None] - k[None, :]).abs_()  # [rows, keys]
            sums["distance"] += (w * distance).sum(-1).sum(-1, dtype=torch.float64)
            sums["self"] += _diagonal(w, block.start).sum(-1, dtype=torch.float64)
            sums["previous_token"] += _diagonal(w, block.start - 1).sum(-1, dtype=torch.float64)
        rest = w[:, 1:, 1:] if block.start == 0 else w[..., 1:]
        if rest.numel():
            peak = torch.maximum(peak, rest.max())
        if w.numel():
            top = torch.maximum(top, w.max())
        keyed = key_sums(w, f_mean[1])  # [head, rows, key groups]
        for pooler, f in zip(poolers[:2], (f_tile, f_grid)):
            pooler.add(block.start, key_sums(keyed, f[1] // f_mean[1]))
        poolers[2].add(block.start, keyed.mean(0, keepdim=True))
    if poolers is None:  # no rows at all
        raise ValueError("a layer without query rows has nothing to summarise")
    stats = {key: (value / max(1, n_q - 1 if key == "previous_token" else n_q)).cpu().numpy()
             for key, value in sums.items()}
    if not same_axis:
        for key in ("distance", "self", "previous_token"):
            stats[key][:] = np.nan
    elif n_q < 2:
        stats["previous_token"][:] = np.nan
    peak_value = float(peak) if n_q > 1 and n_k > 1 else float(top)
    return LayerSummary({key: readonly(value) for key, value in stats.items()},
                        readonly(poolers[0].result()), f_tile, readonly(poolers[1].result()),
                        f_grid, readonly(poolers[2].result()[0].astype(np.float32)), f_mean,
                        peak_value)


def _diagonal(w: torch.Tensor, offset: int) -> torch.Tensor:
    """Per head, the weights ``w[h, i, i + offset]`` of a block (those inside it): ``[head,
    n]``; ``offset`` is the block's first row (its diagonal) or one less (the token before)."""
    rows, keys = w.shape[1], w.shape[2]
    if offset < 0:  # the first row has no token before it
        return _diagonal(w[:, 1:], 0)
    if offset >= keys:
        return w.new_zeros((w.shape[0], 0))
    return torch.diagonal(w, offset=offset, dim1=1, dim2=2)[:, :rows]


def softmax_rows(logits: torch.Tensor, sinks: torch.Tensor | None = None,
                 dead: bool = False) -> torch.Tensor:
    """Softmax over the last axis of ``[head, rows, keys]`` logits, -inf where masked.

    Args:
        sinks: per head a learned logit that takes part in the normalisation but receives no
            key (gpt-oss's attention sinks): ``[head]``.
        dead: some row may have every key masked; such rows become all 0, not NaN.
    """
    if sinks is None:
        weights = torch.softmax(logits, dim=-1)
        return weights.nan_to_num_(0.0) if dead else weights
    sink = sinks.to(logits.dtype).view(-1, 1, 1)
    top = torch.maximum(logits.amax(-1, keepdim=True), sink)
    weights = (logits - top).exp_()
    total = weights.sum(-1, keepdim=True) + (sink - top).exp()
    return weights.div_(total)


# --- readers of a trace -------------------------------------------------------------------

def head_pooled(trace, name: str, layer: int, head: int, max_side: int
                ) -> tuple[np.ndarray, tuple[int, int]]:
    """One head drawn in at most ``max_side`` × ``max_side`` cells: the exact weights when
    they fit, else pooled (see :func:`pool`) without ever holding the whole head.

    Returns:
        ``(weights [query or block, key or block], (tokens per query block, per key
        block))``; float32 exact weights when the factors are ``(1, 1)``.
    """
    n_q, n_k = (len(t) for t in trace.axes(name))
    fq, fk = factors(n_q, n_k, max_side)
    if fq == fk == 1:
        return trace.weights(name, layer, head), (1, 1)
    return pool(trace.blocks(name, layer, [head]), 1, n_q, n_k, fq, fk)[0], (fq, fk)


def region(trace, name: str, layer: int, head: int, rows: range, keys: range) -> np.ndarray:
    """The exact weights of one head for query ``rows`` and ``keys`` (ranges of step 1):
    float32 ``[rows, keys]``, computed for those rows only."""
    n_k = len(trace.axes(name)[1])
    if not (keys.step == 1 and 0 <= keys.start <= keys.stop <= n_k):
        raise ValueError(f"keys {keys!r} must be a range of step 1 inside 0..{n_k}")
    return assemble(trace.blocks(name, layer, [head], rows), 1, rows, n_k, keys)[0]


def layer_summary(trace, name: str, layer: int, **sizes) -> LayerSummary:
    """:func:`summarise` of every head of one layer of a trace (``sizes``: ``tile``,
    ``grid``, ``mean_side``)."""
    n_q, n_k = (len(t) for t in trace.axes(name))
    return summarise(trace.blocks(name, layer), trace.n_heads, n_q, n_k,
                     name.endswith(".self"), **sizes)
