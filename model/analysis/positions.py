"""Positional-encoding data for the views, as numpy: the seed's table, RoPE, the model's own.

Uses the seed's formulas of :mod:`model.own.position_encoding` (torch) and hands plain arrays to
viz/; the loaded model is read through :class:`~model.interface.LoadedModel` only.
"""

from __future__ import annotations

import numpy as np
import torch

from model.interface import LoadedModel
from model.own.position_encoding import rope_frequencies, rope_rotate, sinusoidal_table


def sinusoidal(n_positions: int, d_model: int) -> np.ndarray:
    """The seed's table ``[position, dimension]`` as float64 numpy."""
    return sinusoidal_table(n_positions, d_model).double().numpy()


def dot_similarity(vectors: np.ndarray) -> np.ndarray:
    """Position × position dot products of ``[position, dim]`` vectors."""
    return vectors @ vectors.T


def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """Position × position cosine similarities."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1)
    return unit @ unit.T


def rope_thetas(d_head: int, base: float = 10000.0) -> np.ndarray:
    """Radians per position of each RoPE pair, ``[d_head / 2]``."""
    return rope_frequencies(d_head, base).numpy()


def clock_dims(d_model: int) -> list[int]:
    """The dimensions of a ``d_model``-wide sinusoidal table drawn as clock hands, fastest to
    slowest: 0 and 2, a quarter and half of the way, and the last pair's sine."""
    return [0, 2, d_model // 4, d_model // 2, d_model - 2]


def rope_thetas_shown(d_head: int = 64, pairs: tuple[int, ...] = (0, 4, 12, 31)) -> np.ndarray:
    """Radians per position of a few RoPE pairs of a ``d_head``-wide head (the fastest, the
    slowest and two between): ``[len(pairs)]``."""
    return rope_thetas(d_head)[list(pairs)]


def rope_offset_scores(n_positions: int = 24, d_head: int = 64, base: float = 10000.0,
                       seed: int = 0) -> np.ndarray:
    """q·k after RoPE for one random q at positions m and one random k at positions n.

    Returns:
        float64 ``[m, n]``; constant along each diagonal (it depends on m − n only).
    """
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(d_head, generator=generator, dtype=torch.float64)
    k = torch.randn(d_head, generator=generator, dtype=torch.float64)
    positions = torch.arange(n_positions)
    q_rot = rope_rotate(q.expand(n_positions, d_head), positions, base)  # [m, d_head]
    k_rot = rope_rotate(k.expand(n_positions, d_head), positions, base)  # [n, d_head]
    return (q_rot @ k_rot.T).numpy()


def model_positions(loaded: LoadedModel, n_positions: int = 64) -> dict:
    """What the loaded model uses for positions.

    Returns:
        ``{"scheme": ...}`` plus, for RoPE, ``"theta"`` (the base), ``"d_head"`` and
        ``"periods"`` (positions per turn of each pair); for learned embeddings,
        ``"similarity"`` (cosine, first ``n_positions`` positions) and ``"parameter"``; for the
        sinusoidal own models, ``"table"``.
    """
    info, dims = loaded.positions, loaded.dims
    if info.scheme == "rope":
        theta = info.rope_theta or 10000.0
        return {"scheme": "rope", "theta": theta, "d_head": dims.d_head,
                "periods": 2 * np.pi / rope_thetas(dims.d_head, theta)}
    learned = loaded.position_embeddings(n_positions)
    if learned is not None:
        parameter, vectors = learned
        return {"scheme": info.scheme, "parameter": parameter,
                "similarity": cosine_similarity(vectors)}
    table = loaded.position_table(n_positions)
    if table is not None:
        return {"scheme": info.scheme, "table": table}
    return {"scheme": info.scheme}
