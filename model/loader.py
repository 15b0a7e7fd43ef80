"""One entry point for every SPEC: bundled names, hub ids, local directories, .gguf files.

The only module that knows which adapter serves a SPEC; everything else reads the
:class:`~model.interface.LoadedModel` it returns.
"""

from __future__ import annotations

from .interface import LoadedModel

BUNDLED = ("own-random", "own-translator", "minilm", "smollm2")


def load(spec: str, device: str = "auto", trust_remote_code: bool = False) -> LoadedModel:
    """Load a model ready to :meth:`~model.interface.LoadedModel.trace` text.

    Args:
        spec: a bundled name (``own-random``, ``own-translator``, ``minilm``, ``smollm2``), a
            Hugging Face hub id, a local checkpoint directory or a ``.gguf`` file.
        device: ``"auto"`` (CUDA when present, else CPU), ``"cpu"`` or ``"cuda"``.
        trust_remote_code: run a hub checkpoint's own Python code (off unless asked).

    Returns:
        a :class:`~model.interface.LoadedModel`: ``name``, ``family``, ``device``, ``dims``,
        ``positions``, ``trace(text, target=None)``, ...
    """
    if spec == "own-random":
        from .own.adapter import OwnModel

        return OwnModel.random(device)
    if spec == "own-translator":
        from .own.translator import Translator

        return Translator.from_files(device=device)
    from .hf.adapter import HFModel

    return HFModel.load(spec, device=device, trust_remote_code=trust_remote_code)
