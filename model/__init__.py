"""Models, attention capture and the trace. Owns torch and transformers; never imports streamlit.

    from model import load
    m = load("own-random")
    t = m.trace("The cat sat on the mat")
    t.weights("encoder.self", layer=0, head=0)

The contract sits at the top (:mod:`.trace`, :mod:`.store`, :mod:`.facts`, :mod:`.interface`,
:mod:`.loader`, :mod:`.errors`, the CLI in ``__main__``); the rooms below name the architecture:
:mod:`.own` (the seed's Transformer and translator), :mod:`.hf` (Hugging Face checkpoints and
their capture) and :mod:`.analysis` (numbers computed from a trace).
"""

from model.errors import ModelLoadError, UnknownWordsError
from model.interface import Generates, Generation, LoadedModel
from model.loader import BUNDLED, MAX_SPEC, load
from model.meta import Family, ModelDims, PositionInfo, Step
from model.own.config import TransformerConfig
from model.trace import AttentionTrace

__all__ = ["BUNDLED", "MAX_SPEC", "AttentionTrace", "Family", "Generates", "Generation",
           "LoadedModel", "ModelDims", "ModelLoadError", "PositionInfo", "Step",
           "TransformerConfig", "UnknownWordsError", "load"]
