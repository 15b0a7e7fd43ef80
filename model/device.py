"""Choosing the torch device: CUDA when present, else CPU, or what the user asks for."""

from __future__ import annotations

import torch

from i18n import _


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """Turn ``"auto"``/``None`` into CUDA when available (else CPU); validate anything else.

    Raises:
        ValueError: an unknown device, or CUDA where torch sees none.
    """
    if device is None or str(device).strip() == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(str(device).strip())
    except RuntimeError:
        raise ValueError(_("unknown device {device}: use auto, cpu or cuda").format(
            device=repr(str(device)[:40]))) from None
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": torch.backends.mps.is_available()}
    if device.type not in available:
        raise ValueError(_("device {device} is not supported here: use auto, cpu or cuda").format(
            device=repr(device.type)))
    if not available[device.type]:
        raise ValueError(_("{device} was asked for, but torch sees no {device} device on this "
                           "machine").format(device=device.type.upper()))
    return device
