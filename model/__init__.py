"""Models, attention capture and the trace. Owns torch and transformers; never imports streamlit.

    from model import load
    m = load("own-random")
    t = m.trace("The cat sat on the mat")
    t.weights("encoder.self", layer=0, head=0)
"""

from .config import TransformerConfig
from .loader import BUNDLED, load
from .trace import AttentionTrace

__all__ = ["BUNDLED", "AttentionTrace", "TransformerConfig", "load"]
