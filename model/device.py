"""Choosing the torch device (CUDA when present, else CPU, or what the user asks for), the
precision a model loads in, and the memory its weights may take."""

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


# The precisions a model loads in, by the names users give them.
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None = "auto",
                  device: str | torch.device | None = "auto") -> torch.dtype:
    """Turn ``"auto"``/``None`` into the precision ``device`` runs best in (bfloat16 on a CUDA
    GPU that supports it, float16 on older CUDA GPUs, float32 elsewhere); validate anything else
    (``"float32"``, ``"bfloat16"``, ``"float16"`` or those torch dtypes).

    Raises:
        ValueError: an unknown precision (or an unknown ``device`` with ``"auto"``).
    """
    if isinstance(dtype, torch.dtype):
        if dtype not in DTYPES.values():
            raise ValueError(_("unknown dtype {dtype}: use auto, float32, bfloat16 or "
                               "float16").format(dtype=repr(dtype_name(dtype))))
        return dtype
    if dtype is None or str(dtype).strip() == "auto":
        where = resolve_device(device) if not isinstance(device, torch.device) else device
        if where.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    name = str(dtype).strip().removeprefix("torch.")
    if name not in DTYPES:
        raise ValueError(_("unknown dtype {dtype}: use auto, float32, bfloat16 or "
                           "float16").format(dtype=repr(str(dtype)[:40])))
    return DTYPES[name]


def dtype_name(dtype: torch.dtype) -> str:
    """``"float32"``, ``"bfloat16"``, ... for a torch dtype."""
    return str(dtype).removeprefix("torch.")


def available_memory(device: torch.device, devices: list[torch.device] | None = None) -> int:
    """Bytes a model's weights may take on ``device`` now: the RAM available on the CPU (psutil),
    the free memory of the GPU on CUDA, summed over ``devices`` when a model is spread over
    several."""
    if device.type == "cuda":
        found = devices or [device]
        return sum(int(torch.cuda.mem_get_info(d)[0]) for d in found)
    import psutil

    return int(psutil.virtual_memory().available)
