"""One entry point for every SPEC: bundled names, hub ids, local directories, .gguf files.

The only module that knows which adapter serves a SPEC; everything else reads the
:class:`~model.interface.LoadedModel` it returns.
"""

from __future__ import annotations

from i18n import _
from model.errors import ModelLoadError
from model.interface import LoadedModel
from model.policy import OPEN, LoadPolicy

# The own models (the seed's Transformer, random and trained; the lesson's recurrent
# translators, model.own.recurrent), then the pretrained checkpoints that ship as packages.
BUNDLED = ("own-random", "own-translator", "own-rnn", "own-gru", "own-bahdanau", "minilm",
           "smollm2")
# The single-vector models (a plain tanh RNN, a GRU), then the GRU with additive attention.
RECURRENT = ("own-rnn", "own-gru", "own-bahdanau")
MAX_SPEC = 512  # characters: longer than any hub id, and than most paths


def load(spec: str, device: str = "auto", trust_remote_code: bool = False,
         policy: LoadPolicy = OPEN, dtype: str = "auto") -> LoadedModel:
    """Load a model ready to :meth:`~model.interface.LoadedModel.trace` text.

    Args:
        spec: a bundled name (``own-random``, ``own-translator``, the recurrent translators
            ``own-rnn``, ``own-gru`` and ``own-bahdanau``, ``minilm``, ``smollm2``), a Hugging
            Face hub id, a local checkpoint directory or a ``.gguf`` file; surrounding spaces
            are ignored.
        device: ``"auto"`` (CUDA when present, spread over every GPU when torch sees several,
            else CPU), ``"cpu"`` or ``"cuda"``.
        trust_remote_code: run a hub checkpoint's own Python code (off unless asked, and only
            where ``policy`` allows it).
        policy: where models may come from (:mod:`model.policy`); the default allows any
            spec, as on one's own machine.
        dtype: the precision of the weights: ``"auto"`` (bfloat16 on a CUDA GPU that supports
            it, float16 on older ones, float32 on the CPU), ``"float32"``, ``"bfloat16"`` or
            ``"float16"`` (or those torch dtypes). Attention weights are computed with float32
            accumulation whatever it is.

    Returns:
        a :class:`~model.interface.LoadedModel`: ``name``, ``family``, ``device``, ``dims``,
        ``positions``, ``trace(text, target=None)``, ...

    Raises:
        ModelLoadError: the spec cannot be loaded, is larger than the memory available, or
            ``policy`` refuses it.
        ValueError: an unknown ``device`` or ``dtype``.
    """
    from model.device import resolve_dtype

    resolve_dtype(dtype, "cpu")  # an unknown precision says so before anything loads
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a string, not {type(spec).__name__}")
    spec = spec.strip()
    if not spec:
        raise ModelLoadError(_("no model was named"))
    if len(spec) > MAX_SPEC:
        raise ModelLoadError(_("a model name of {count:,} characters is too long to be a hub id "
                               "or a path (at most {most})").format(count=len(spec),
                                                                     most=MAX_SPEC))
    if spec == "own-random":
        from model.own.adapter import OwnModel

        return OwnModel.random(device, dtype=dtype)
    if spec == "own-translator":
        from model.own.translator import Translator

        return Translator.from_files(device=device, dtype=dtype)
    if spec in RECURRENT:
        from model.own.recurrent import RecurrentTranslator

        return RecurrentTranslator.from_files(spec, device=device, dtype=dtype)
    if spec not in BUNDLED and not policy.other:
        raise ModelLoadError(_("this server offers its bundled models only ({models}); its "
                               "operator has switched other models off").format(
                                   models=", ".join(BUNDLED)))
    if trust_remote_code and not policy.trust_remote_code:
        raise ModelLoadError(_("this server does not run a checkpoint's own code "
                               "(trust_remote_code is off)"))
    from model.hf.adapter import HFModel

    return HFModel.load(spec, device=device, trust_remote_code=trust_remote_code, policy=policy,
                        dtype=dtype)
