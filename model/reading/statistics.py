"""The five per-head statistics of attention weights, in one kernel for every reader.

The statistics (:data:`model.analysis.statistics.STATS`) are means over a head's query rows of:
the entropy of the row (nats, ``-Σ w·log w`` with ``0·log 0 = 0``); its weight on the first
key; and, for self-attention (queries and keys on one axis), the weighted distance
``Σ w·|q − k|``, the weight on the query itself and on the token before it (this one over rows
1…, so NaN for a one-row head).

One kernel computes them for both kinds of reader:

- a layer read in row blocks (:func:`model.reading.blocks.summarise`): :func:`row_sums` of each
  block ``[head, rows, keys]`` (its first row is query ``start``) are added up, and
  :func:`means` divides them by the number of rows;
- a padded batch ``[sentence, head, query, key]`` (:mod:`model.corpus.statistics`): one call of
  :func:`row_sums` from row 0 and :func:`means` with each sentence's number of queries. Rows
  and keys past a sentence's end must hold 0 (as :class:`model.reading.batch.AttentionBatch`
  guarantees): a zero row adds exactly nothing to any sum.
"""

from __future__ import annotations

import numpy as np
import torch

KEYS = ("entropy", "first_token", "distance", "self", "previous_token")
SAME_AXIS = ("distance", "self", "previous_token")  # defined for self-attention only
TINY = float(np.finfo(np.float32).tiny)


def accumulator(device) -> torch.dtype:
    """What sums are kept in on ``device``: float64, or float32 where there is none (Apple's
    MPS)."""
    return torch.float32 if device is not None and torch.device(device).type == "mps" \
        else torch.float64


def row_sums(w: torch.Tensor, start: int = 0, same_axis: bool = True) -> dict[str, torch.Tensor]:
    """The statistics of :data:`KEYS` summed over the query rows of ``w``.

    Args:
        w: weights ``[..., head, rows, keys]`` (any leading axes, e.g. sentences) whose first
            row is query ``start`` and whose keys start at key 0.
        start: the position of the first row (a block's first row).
        same_axis: queries and keys on one axis (self-attention): the distance, self and
            previous-token sums too, else only the entropy and first-token ones.

    Returns:
        per statistic, ``[..., head]`` sums in :func:`accumulator`'s dtype on ``w``'s device.
    """
    f64 = accumulator(w.device)
    # -Σ w·log w with 0·log 0 = 0: weights are raised to the smallest normal float first (the
    # log of 0 is slow, and 0 · log(tiny) is 0), which moves no weight above it
    logs = w.clamp_min(TINY).log_().mul_(w)
    sums = {"entropy": -logs.sum(-1).sum(-1, dtype=f64),
            "first_token": w[..., 0].sum(-1, dtype=f64)}
    if not same_axis:
        return sums
    rows, ke = w.shape[-2], w.shape[-1]
    q = torch.arange(start, start + rows, device=w.device, dtype=torch.float32)
    before = min(start, ke)  # keys before the block's first query: |q - k| = q - k
    if before:  # Σ w and Σ w·k of the keys before the block in one product
        ones_k = torch.stack([torch.ones(before, device=w.device),
                              torch.arange(before, device=w.device, dtype=torch.float32)], 1)
        left = w[..., :before] @ ones_k  # [..., head, rows, 2]
        distance = (left[..., 0] * q - left[..., 1]).sum(-1, dtype=f64)
    else:
        distance = torch.zeros(w.shape[:-2], dtype=f64, device=w.device)
    if before < ke:
        k = torch.arange(before, ke, device=w.device, dtype=torch.float32)
        near = (q[:, None] - k[None, :]).abs_()  # [rows, keys]
        distance += (w[..., before:] * near).sum(-1).sum(-1, dtype=f64)
    sums["distance"] = distance
    sums["self"] = _diagonal(w, start).sum(-1, dtype=f64)
    sums["previous_token"] = _diagonal(w, start - 1).sum(-1, dtype=f64)
    return sums


def means(sums: dict[str, torch.Tensor], n_q, same_axis: bool) -> dict[str, np.ndarray]:
    """The statistics of :data:`KEYS` from :func:`row_sums` added up over every row.

    Args:
        sums: per statistic ``[..., head]`` sums (those of :data:`SAME_AXIS` may be left out
            when not ``same_axis``).
        n_q: the number of query rows: an int, or an int array ``[...]`` (one per sentence).
        same_axis: self-attention; else the statistics of :data:`SAME_AXIS` are NaN.

    Returns:
        per statistic, float64 numpy ``[..., head]``; ``previous_token`` is NaN where there
        is a single row.
    """
    first = sums["entropy"]
    n = torch.as_tensor(np.asarray(n_q), dtype=first.dtype, device=first.device)[..., None]
    out = {}
    for key in KEYS:
        if key in SAME_AXIS and not same_axis:
            out[key] = np.full(tuple(first.shape), np.nan)
        elif key == "previous_token":  # over rows 1…
            out[key] = torch.where(n > 1, sums[key] / (n - 1), torch.nan).cpu().double().numpy()
        else:
            out[key] = (sums[key] / n).cpu().double().numpy()
    return out


def _diagonal(w: torch.Tensor, offset: int) -> torch.Tensor:
    """The weights ``w[..., h, i, i + offset]`` of a block (those inside it): ``[..., head,
    n]``; ``offset`` is the block's first row (its diagonal) or one less (the token before)."""
    rows, keys = w.shape[-2], w.shape[-1]
    if offset < 0:  # the first row has no token before it
        return _diagonal(w[..., 1:, :], 0)
    if offset >= keys:
        return w.new_zeros((*w.shape[:-2], 0))
    return torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)[..., :rows]
