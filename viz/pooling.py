"""Block pooling: long attention matrices drawn as blocks of tokens, so pages stay light.

A 2,048-token head is 4 million cells: too many for a browser to draw nine times over. Pooled,
row block i and column block j hold the attention of the average query of block i summed over
the keys of block j, so every pooled row still sums to 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def block_factor(n: int, max_side: int) -> int:
    """Tokens per block so that ``n`` tokens fit in ``max_side`` blocks."""
    return max(1, math.ceil(n / max_side))


def pool_weights(weights: np.ndarray, fq: int, fk: int) -> np.ndarray:
    """``[..., query, key]`` -> ``[..., ceil(query / fq), ceil(key / fk)]``.

    Keys are summed within a block, queries averaged over the real rows of a block, so each
    pooled row sums to 1 when every row of ``weights`` does.
    """
    *lead, n_q, n_k = weights.shape
    bq, bk = math.ceil(n_q / fq), math.ceil(n_k / fk)
    padded = np.zeros((*lead, bq * fq, bk * fk))
    padded[..., :n_q, :n_k] = weights
    sums = padded.reshape(*lead, bq, fq, bk, fk).sum(axis=(-3, -1))  # [..., q block, k block]
    rows = np.zeros(bq * fq)
    rows[:n_q] = 1
    return sums / rows.reshape(bq, fq).sum(axis=1)[:, None]


def pool_allowed(allowed: np.ndarray, fq: int, fk: int) -> np.ndarray:
    """A block is allowed when any of its cells is."""
    n_q, n_k = allowed.shape
    bq, bk = math.ceil(n_q / fq), math.ceil(n_k / fk)
    padded = np.zeros((bq * fq, bk * fk), dtype=bool)
    padded[:n_q, :n_k] = allowed
    return padded.reshape(bq, fq, bk, fk).any(axis=(1, 3))


def masked_blocks(weights: np.ndarray, allowed: np.ndarray,
                  factors: tuple[int, int]) -> np.ndarray:
    """Weights as drawn, ``[query or block, key or block]`` (pooled by ``factors`` tokens
    per block), with NaN where a block (or cell) is wholly masked: the shown table, its masked
    cells empty."""
    fq, fk = factors
    return np.where(pool_allowed(allowed, fq, fk), weights, np.nan)


def block_labels(tokens: Sequence[str], factor: int) -> list[str]:
    """Labels of token blocks: the token itself, or ``'first…last'`` of the block."""
    if factor == 1:
        return [str(t) for t in tokens]
    labels = []
    for start in range(0, len(tokens), factor):
        end = min(start + factor, len(tokens)) - 1
        labels.append(f"{start}–{end}: {str(tokens[start]).strip()}…{str(tokens[end]).strip()}")
    return labels
