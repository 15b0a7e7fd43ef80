"""Shared fixtures: small own models, the own-random trace, figure-spec decoding."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from model.config import TransformerConfig  # noqa: E402
from model.own import OwnModel  # noqa: E402
from model.transformer import Transformer  # noqa: E402

SEED_SENTENCE = "The cat sat on the mat"


def tiny_own_model(family: str = "encoder-decoder", positional: str = "sinusoidal",
                   seed: int = 0) -> OwnModel:
    """A small own Transformer (d_model 32, 4 heads, 2 layers per stack) on the CPU."""
    layers = {"encoder-decoder": (2, 2), "encoder-only": (2, 0), "decoder-only": (0, 2)}[family]
    cfg = TransformerConfig(src_vocab_size=64, d_model=32, n_heads=4, n_encoder_layers=layers[0],
                            n_decoder_layers=layers[1], d_ff=64, positional=positional)
    torch.manual_seed(seed)
    return OwnModel(f"tiny-{family}", Transformer(cfg), torch.device("cpu"))


@pytest.fixture(scope="session")
def own_random():
    from model import load

    return load("own-random", device="cpu")


@pytest.fixture(scope="session")
def seed_trace(own_random):
    return own_random.trace(SEED_SENTENCE)


def plotly_array(value) -> np.ndarray:
    """Decode an array from a figure's JSON (plain lists or Plotly's typed-array dicts)."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            shape = [int(s) for s in str(value["shape"]).split(",")]
            array = array.reshape(shape)
        return array
    return np.array(value, dtype=float)
