"""Configuration of the project's own Transformer (seed 3.5 defaults)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from model.meta import Family

Positional = Literal["sinusoidal", "rope"]


@dataclass(frozen=True)
class TransformerConfig:
    """Hyper-parameters of the own Transformer.

    Encoder-only, decoder-only and encoder-decoder models are configurations of the same code:
    ``n_encoder_layers == 0`` gives a decoder-only model (no cross-attention), ``n_decoder_layers
    == 0`` an encoder-only one.

    Args:
        src_vocab_size: size of the source (encoder) vocabulary.
        tgt_vocab_size: size of the target (decoder) vocabulary; defaults to ``src_vocab_size``.
        d_model: width of every residual stream vector (seed: 512).
        n_heads: attention heads per layer (seed: 8); ``d_head = d_model // n_heads``.
        n_encoder_layers: encoder layers (seed: 6).
        n_decoder_layers: decoder layers (seed: 6).
        d_ff: hidden width of the position-wise FFN (seed: 2048).
        dropout: dropout after each sublayer and after the embeddings (seed: 0.1).
        positional: ``"sinusoidal"`` (added to the embeddings, seed 3.4) or ``"rope"`` (Q and K
            of self-attention rotated by position).
        max_len: longest sequence the sinusoidal table covers.
        rope_base: the base of RoPE's frequencies (10000 as in RoFormer).
        pad_id: the id of the padding token in both vocabularies.
    """

    src_vocab_size: int = 32
    tgt_vocab_size: int | None = None
    d_model: int = 512
    n_heads: int = 8
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    positional: Positional = "sinusoidal"
    max_len: int = 4096
    rope_base: float = 10000.0
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.positional not in ("sinusoidal", "rope"):
            raise ValueError(f"positional must be 'sinusoidal' or 'rope', not {self.positional!r}")
        if self.positional == "rope" and self.d_head % 2:
            raise ValueError(f"RoPE needs an even d_head, got {self.d_head}")
        if self.n_encoder_layers < 0 or self.n_decoder_layers < 0:
            raise ValueError("layer counts must be >= 0")
        if self.n_encoder_layers == 0 and self.n_decoder_layers == 0:
            raise ValueError("a model needs at least one encoder or decoder layer")
        if self.tgt_vocab_size is None:
            object.__setattr__(self, "tgt_vocab_size", self.src_vocab_size)

    @property
    def d_head(self) -> int:
        """Width of one head: d_model / n_heads (seed: 64)."""
        return self.d_model // self.n_heads

    @property
    def family(self) -> Family:
        """Encoder-only, decoder-only or encoder-decoder, from the layer counts."""
        if self.n_decoder_layers == 0:
            return Family.ENCODER_ONLY
        if self.n_encoder_layers == 0:
            return Family.DECODER_ONLY
        return Family.ENCODER_DECODER

    def to_dict(self) -> dict:
        """The config as plain JSON-able values."""
        return asdict(self)
