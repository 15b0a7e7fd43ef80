"""Models, attention capture and the trace. Owns torch and transformers; never imports streamlit.

    from model import load
    m = load("own-random")
    t = m.trace("The cat sat on the mat")
    t.weights("encoder.self", layer=0, head=0)

The contract sits at the top: :mod:`.trace` (:class:`AttentionTrace` and its export),
:mod:`.store` (how a trace keeps one attention kind), :mod:`.meta` (the typed facts:
:class:`Family`, :class:`ModelDims`, :class:`PositionInfo`, :class:`Step`), :mod:`.interface`
(:class:`LoadedModel`, the protocol both adapters implement), :mod:`.loader` (``load(SPEC)``),
:mod:`.policy` (which models a server allows, checked by ``load``), :mod:`.budget` (the memory
a trace of n tokens needs), :mod:`.text` (checks on the text to trace), :mod:`.errors`,
:mod:`.device` and the CLI in :mod:`.__main__`. The rooms below name the architecture:
:mod:`.own` (the seed's Transformer and translator), :mod:`.hf` (Hugging Face checkpoints and
their capture), :mod:`.reading` (attention read in row blocks and padded batches),
:mod:`.analysis` (numbers computed from a trace), :mod:`.corpus` (many sentences, here or on
Ray) and :mod:`.lessons` (what each lesson computes).
"""

from model.errors import CaptureError, ModelLoadError, UnknownWordsError
from model.interface import Generates, Generation, LoadedModel
from model.loader import BUNDLED, MAX_SPEC, load
from model.meta import Family, ModelDims, PositionInfo, Step
from model.own.config import TransformerConfig
from model.trace import AttentionTrace

__all__ = ["BUNDLED", "MAX_SPEC", "AttentionTrace", "Family", "Generates", "Generation",
           "CaptureError", "LoadedModel", "ModelDims", "ModelLoadError", "PositionInfo", "Step",
           "TransformerConfig", "UnknownWordsError", "load"]
