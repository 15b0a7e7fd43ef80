"""Positional encodings of seed 3.4: the sinusoidal table and rotary encoding (RoPE)."""

from __future__ import annotations

import math

import torch


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """The fixed sinusoidal table of seed 3.4.

    ``PE(pos, 2i) = sin(pos / 10000^(2i/d_model))``,
    ``PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))``.

    Args:
        n_positions: number of positions (rows).
        d_model: width (columns); must be even.

    Returns:
        float32 tensor ``[n_positions, d_model]``.
    """
    if d_model % 2:
        raise ValueError(f"the sinusoidal table needs an even d_model, got {d_model}")
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [d_model / 2]
    angle = pos / torch.pow(10000.0, two_i / d_model)  # [pos, d_model / 2]
    table = torch.empty(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table.float()


def rope_frequencies(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """Rotation speed of each 2-D pair: ``theta_i = base^(-2i/d_head)``, shape ``[d_head / 2]``."""
    return torch.pow(base, -torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)


def rope_rotate(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate each consecutive pair ``(x[2i], x[2i+1])`` of ``x`` by ``position * theta_i``.

    This is RoFormer's rotary encoding: after rotating q at position m and k at position n, the
    dot product q·k depends on m and n only through m - n.

    Args:
        x: ``[..., L, d_head]`` queries or keys (d_head even).
        positions: ``[L]`` integer positions.
        base: frequency base.

    Returns:
        tensor of the same shape and dtype as ``x``.
    """
    d_head = x.shape[-1]
    if d_head % 2:
        raise ValueError(f"RoPE needs an even last dimension, got {d_head}")
    theta = rope_frequencies(d_head, base).to(x.device)  # [d_head / 2]
    angle = positions.to(x.device, torch.float64).unsqueeze(-1) * theta  # [L, d_head / 2]
    cos = torch.cos(angle).to(x.dtype)
    sin = torch.sin(angle).to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # [..., L, d_head / 2] each
    rotated = torch.empty_like(x)
    rotated[..., 0::2] = x_even * cos - x_odd * sin
    rotated[..., 1::2] = x_even * sin + x_odd * cos
    return rotated


def rope_period(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """Positions per full turn of each pair (the "clock hand" periods), ``[d_head / 2]``."""
    return 2 * math.pi / rope_frequencies(d_head, base)
