"""Choosing the torch device: CUDA when present, else CPU, or what the user asks for."""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """Turn ``"auto"``/``None`` into CUDA when available (else CPU); validate anything else."""
    if device is None or str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA was asked for, but torch sees no CUDA device on this machine")
    return device
