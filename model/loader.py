"""One entry point for every SPEC: bundled names, hub ids, local directories, .gguf files."""

from __future__ import annotations

from .own import OwnModel

BUNDLED = ("own-random", "own-translator", "minilm", "smollm2")


def load(spec: str, device: str = "auto", trust_remote_code: bool = False):
    """Load a model ready to :meth:`trace` text.

    Args:
        spec: a bundled name (``own-random``, ``own-translator``, ``minilm``, ``smollm2``), a
            Hugging Face hub id, a local checkpoint directory or a ``.gguf`` file.
        device: ``"auto"`` (CUDA when present, else CPU), ``"cpu"`` or ``"cuda"``.
        trust_remote_code: run a hub checkpoint's own Python code (off unless asked).

    Returns:
        a model object with ``name``, ``family``, ``device`` and ``trace(text, target=None)``.
    """
    if spec == "own-random":
        return OwnModel.random(device)
    if spec == "own-translator":
        from .translator import Translator

        return Translator.from_files(device=device)
    from .hf import HFModel

    return HFModel.load(spec, device=device, trust_remote_code=trust_remote_code)
