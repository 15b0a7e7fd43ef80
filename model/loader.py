"""One entry point for every SPEC: bundled names, hub ids, local directories, .gguf files."""

from __future__ import annotations

from .own import OwnModel

BUNDLED = ("own-random", "own-translator")


def load(spec: str, device: str = "auto"):
    """Load a model ready to :meth:`trace` text.

    Args:
        spec: a bundled name (``own-random``, ``own-translator``).
        device: ``"auto"`` (CUDA when present, else CPU), ``"cpu"`` or ``"cuda"``.

    Returns:
        a model object with ``name``, ``family``, ``device`` and ``trace(text, target=None)``.
    """
    if spec == "own-random":
        return OwnModel.random(device)
    if spec == "own-translator":
        from .translator import Translator

        return Translator.from_files(device=device)
    raise ValueError(f"unknown model {spec!r}; bundled models: {', '.join(BUNDLED)}")
