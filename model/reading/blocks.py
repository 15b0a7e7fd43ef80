"""Attention read in row blocks, with torch, on the device where the model ran.

A store (:class:`model.store.AttentionStore`) hands out a layer's weights as a sequence of
:class:`Block`: a few query rows of the chosen heads at a time, ``[head, rows, keys]`` float32
on the store's device, about :data:`BLOCK_BYTES` each (at least
:data:`~model.store.MIN_ROWS` rows, so a long input's blocks grow: 19 MB for smollm2 at 8,192
tokens), so that memory follows the length of a row, never a layer. A reader holds one block
and a few temporaries of its size at a time. Every reader here consumes such blocks:

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

from model.reading.statistics import KEYS, accumulator, means, row_sums
from model.store import BLOCK_BYTES, Block, readonly, row_slices, rows_per_block

__all__ = ["BLOCK_BYTES", "Block", "LayerSummary", "assemble", "factors", "group_sums", "pool",
           "row_slices", "rows_per_block", "softmax_rows", "summarise", "summary_factors"]


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
    # torch's allocator, not numpy's: numpy asks the kernel for huge pages for a large array,
    # and the first touch of such an array after a trace (memory fragmented) can take seconds
    # of compaction (8,190² float32: 0.9 s, against 0.1 s in small pages). Each cell is written
    # once: a block's keys, then the zeros past them.
    out = torch.empty((heads, len(rows), len(keys)), dtype=torch.float32).numpy()
    done = 0
    for block in blocks:
        w = _tensor(block.weights)[..., keys.start:keys.stop].cpu().numpy()
        a, b = block.start - rows.start, block.stop - rows.start
        out[:, a:b, :w.shape[-1]] = w
        out[:, a:b, w.shape[-1]:] = 0
        done = max(done, b)
    out[:, done:] = 0  # rows no block covered (none, for blocks that cover ``rows``)
    return out


def group_sums(w: torch.Tensor, f: int, dim: int) -> torch.Tensor:
    """``w`` summed over consecutive groups of ``f`` along ``dim`` (the last group may be
    shorter), without copying ``w``."""
    if f == 1:
        return w
    dim = dim % w.dim()
    n = w.shape[dim]
    full = n - n % f
    parts = []
    if full:
        shape = [*w.shape[:dim], full // f, f, *w.shape[dim + 1:]]
        parts.append(w.narrow(dim, 0, full).reshape(shape).sum(dim + 1))
    if full < n:
        parts.append(w.narrow(dim, full, n - full).sum(dim, keepdim=True))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim)


class _Pooler:
    """Accumulates sums into ``[head, ceil(n_q / fq), ceil(n_k / fk)]`` pooled weights."""

    def __init__(self, heads: int, n_q: int, n_k: int, fq: int, fk: int, device):
        self.fq, self.fk, self.n_q = fq, fk, n_q
        self.sums = torch.zeros((heads, math.ceil(n_q / fq), math.ceil(n_k / fk)),
                                dtype=accumulator(device), device=device)

    def to(self, device) -> None:
        """Keep the sums on ``device`` (where the blocks are)."""
        if self.sums.device != torch.device(device):
            self.sums = self.sums.to(device, accumulator(device))

    def add(self, rows: torch.Tensor, keyed: torch.Tensor) -> None:
        """Add ``keyed`` ``[head, n, key groups]``: weights summed over groups of ``fk`` keys
        (from the first), whose row i belongs to pooled row ``rows[i]``."""
        self.sums[..., :keyed.shape[-1]].index_add_(-2, rows, keyed.to(self.sums.dtype))

    def result(self) -> np.ndarray:
        counts = np.minimum(self.fq, self.n_q - np.arange(self.sums.shape[-2]) * self.fq)
        return self.sums.cpu().double().numpy() / counts[:, None]


class _Grouped:
    """A block's weights summed over groups of ``unit`` rows and ``fk`` keys, ready for any
    pooler whose factors are multiples of those (rows first: a sum along rows reads memory
    in order, and leaves fewer rows for the keys)."""

    def __init__(self, block: Block, w: torch.Tensor, fq: int, fk: int):
        aligned = block.start % fq == 0
        self.unit = fq if aligned else 1  # a misaligned block (a region) goes row by row
        rows = group_sums(w, self.unit, 1)
        self.sums = group_sums(rows, fk, -1)  # [head, row groups, key groups]
        self.first = block.start // self.unit
        self.fk = fk
        self._ids = torch.arange(self.first, self.first + self.sums.shape[1], device=w.device)

    def rows(self, fq: int) -> torch.Tensor:
        """The pooled row of each row group, for a pooler of ``fq`` rows."""
        return self._ids // (fq // self.unit)

    def add_to(self, pooler: _Pooler, sums: torch.Tensor | None = None) -> None:
        sums = self.sums if sums is None else sums
        pooler.add(self.rows(pooler.fq), group_sums(sums, pooler.fk // self.fk, -1))


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
        _Grouped(block, w, fq, fk).add_to(pooler)
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
              tile: int, grid: int, mean_side: int, device=None) -> LayerSummary:
    """One pass over a layer's blocks (every head) for :class:`LayerSummary`.

    The statistics are the means over query rows of: the entropy of the row (nats); its
    weight on the first key; and for self-attention (``same_axis``) the weighted distance
    ``Σ w·|q − k|``, the weight on the query itself and on the token before it (this one over
    rows 1…), summed block by block by :func:`model.reading.statistics.row_sums`. Blocks
    aligned to :func:`summary_factors`' first factors are pooled fastest.
    """
    f_mean, f_tile, f_grid = summary_factors(n_q, n_k, tile, grid, mean_side)
    sums = {key: torch.zeros(heads, dtype=accumulator(device), device=device) for key in KEYS}
    poolers = peak = top = None
    for block in blocks:
        w = _tensor(block.weights)  # [head, rows, keys]
        if poolers is None:
            dev = w.device
            poolers = [_Pooler(heads, n_q, n_k, *f, dev) for f in (f_tile, f_grid)]
            poolers.append(_Pooler(1, n_q, n_k, *f_mean, dev))
            sums = {key: value.to(dev, accumulator(dev)) for key, value in sums.items()}
            peak = torch.zeros((), dtype=torch.float32, device=dev)
            top = torch.zeros((), dtype=torch.float32, device=dev)
        for key, value in row_sums(w, block.start, same_axis).items():
            sums[key] += value
        rest = w[:, 1:, 1:] if block.start == 0 else w[..., 1:]
        if rest.numel():  # along the rows first: a reduction over all of a slice is slow
            peak = torch.maximum(peak, rest.amax(-1).max())
        if (n_q < 2 or n_k < 2) and w.numel():
            top = torch.maximum(top, w.amax(-1).max())
        grouped = _Grouped(block, w, *f_mean)
        for pooler in poolers[:2]:
            grouped.add_to(pooler)
        grouped.add_to(poolers[2], grouped.sums.sum(0, keepdim=True) / heads)
    if poolers is None:  # no rows at all
        raise ValueError("a layer without query rows has nothing to summarise")
    stats = means(sums, n_q, same_axis)
    peak_value = float(peak) if n_q > 1 and n_k > 1 else float(top)
    return LayerSummary({key: readonly(value) for key, value in stats.items()},
                        readonly(poolers[0].result()), f_tile, readonly(poolers[1].result()),
                        f_grid, readonly(poolers[2].result()[0].astype(np.float32)), f_mean,
                        peak_value)


def summary_factors(n_q: int, n_k: int, tile: int, grid: int,
                    mean_side: int) -> tuple[tuple[int, int], ...]:
    """Tokens per block ``(queries, keys)`` of :class:`LayerSummary`'s mean, tiles and grid:
    the coarser two are multiples of the mean's, so a block's sums are made once."""
    f_mean = factors(n_q, n_k, mean_side)
    coarser = (tuple(f * factor for f, factor in zip(
        f_mean, factors(-(-n_q // f_mean[0]), -(-n_k // f_mean[1]), side)))
        for side in (tile, grid))
    return (f_mean, *coarser)


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
    blocks = trace.blocks(name, layer, [head], align=(fq, fk))
    return pool(blocks, 1, n_q, n_k, fq, fk)[0], (fq, fk)


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
    f_mean = summary_factors(n_q, n_k, **sizes)[0]
    return summarise(trace.blocks(name, layer, align=f_mean), trace.n_heads, n_q, n_k,
                     name.endswith(".self"), **sizes)


def mean_pooled(trace, name: str, layers, heads, rows: range, keys: range, max_side: int
                ) -> tuple[np.ndarray, tuple[int, int], float]:
    """The weights of query ``rows`` × ``keys`` averaged over ``layers`` and ``heads``, in at
    most ``max_side`` blocks a side (exact when they fit), computed for those rows only.

    Returns:
        ``(mean [row blocks, key blocks] float64, (rows, keys) per block, mass)``: each pooled
        row averages its block's rows and sums its keys (see :func:`pool`); ``mass`` is the
        mean over the rows of the weight they put on ``keys`` (0…1).
    """
    layers, heads = list(layers), list(heads)
    if not layers or not heads:
        raise ValueError("choose at least one layer and one head")
    n_rows, n_keys = len(rows), len(keys)
    if not (keys.step == 1 and 0 <= keys.start < keys.stop <= len(trace.axes(name)[1])
            and n_rows):
        raise ValueError(f"rows {rows!r} and keys {keys!r} must be non-empty ranges inside "
                         f"the {name} weights")
    fq, fk = factors(n_rows, n_keys, max_side)
    pooler = _Pooler(1, n_rows, n_keys, fq, fk, None)
    align = (fq, 1) if rows.start == 0 else (1, 1)
    for layer in layers:
        for block in trace.blocks(name, layer, heads, rows=rows, align=align):
            w = _tensor(block.weights)[..., keys.start:keys.stop]
            if not w.shape[-1]:  # every key of the span lies past what these rows may see
                continue
            pooler.to(w.device)
            summed = w.sum(0, keepdim=True)  # [1, rows, keys]: the heads added up
            _Grouped(Block(block.start - rows.start, summed), summed, fq, fk).add_to(pooler)
    count = len(layers) * len(heads)
    mass = float(pooler.sums.sum()) / (count * n_rows)
    return pooler.result()[0] / count, (fq, fk), mass
