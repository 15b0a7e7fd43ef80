"""Typed facts shared by a loaded model and its traces (no torch, no numpy).

- :class:`Family`: encoder-only, decoder-only or encoder-decoder, and the attention kinds each
  holds (DESIGN.md's table);
- :class:`ModelDims`: the sizes of seed 3.5 (d_model, heads, d_head, d_ff, layers per stack);
- :class:`PositionInfo`: the positional scheme and its parameters;
- :class:`Step`: one generation step's written word and next-token distribution.

Both model adapters describe themselves with these, and :func:`model_facts` turns them into the
one set of ``meta`` keys every trace carries, whichever adapter made it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Literal

from i18n import N_, _

Axis = Literal["tokens", "source", "target"]
CAUSAL_KINDS: tuple[str, ...] = ("decoder.self",)
# The attention kinds of a trace in the lesson's words (in English, translated where shown);
# the names themselves (``encoder.self``) are the API's and the links', never shown.
KIND_NAMES = {
    "encoder.self": N_("encoder self-attention"),
    "decoder.self": N_("decoder masked self-attention"),
    "decoder.cross": N_("cross-attention"),
}


def kind_name(name: str) -> str:
    """Attention kind ``name`` (``"decoder.self"``) in the lesson's words, in the current
    language (解码器掩码自注意力, "decoder masked self-attention"); an unknown one as it is."""
    return _(KIND_NAMES[name]) if name in KIND_NAMES else str(name)


class Family(StrEnum):
    """The three families of seed 3.7. Members equal their strings (``"decoder-only"``)."""

    ENCODER_ONLY = "encoder-only"
    DECODER_ONLY = "decoder-only"
    ENCODER_DECODER = "encoder-decoder"

    @classmethod
    def parse(cls, value: str) -> Family:
        """The family named ``value``, or a ValueError listing the three names."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"family must be one of {tuple(m.value for m in cls)}, not "
                             f"{value!r}") from None

    @property
    def kinds(self) -> tuple[str, ...]:
        """The attention kinds a trace of this family holds, in stack order."""
        return {
            Family.ENCODER_ONLY: ("encoder.self",),
            Family.DECODER_ONLY: ("decoder.self",),
            Family.ENCODER_DECODER: ("encoder.self", "decoder.self", "decoder.cross"),
        }[self]

    @property
    def stacks(self) -> tuple[str, ...]:
        """``("encoder",)``, ``("decoder",)`` or ``("encoder", "decoder")``."""
        return tuple(dict.fromkeys(kind.split(".")[0] for kind in self.kinds))

    @property
    def single_stack(self) -> bool:
        """True for encoder-only and decoder-only models: one token sequence, ``tokens``."""
        return self is not Family.ENCODER_DECODER

    def axes(self, kind: str) -> tuple[Axis, Axis]:
        """The token axes ``(query, key)`` of attention ``kind``: ``tokens``, ``source`` or
        ``target``."""
        if kind not in self.kinds:
            raise ValueError(f"{kind!r} is not in a {self.value} model; choose from {self.kinds}")
        if self.single_stack:
            return "tokens", "tokens"
        return {"encoder.self": ("source", "source"), "decoder.self": ("target", "target"),
                "decoder.cross": ("target", "source")}[kind]

    @property
    def axis_names(self) -> tuple[Axis, ...]:
        """The token axes of this family: ``("tokens",)`` or ``("source", "target")``."""
        return ("tokens",) if self.single_stack else ("source", "target")


@dataclass(frozen=True)
class ModelDims:
    """A model's sizes (seed 3.5's names).

    Args:
        d_model: width of the residual stream.
        n_heads: query heads per attention layer.
        n_kv_heads: key/value heads per layer (fewer than ``n_heads`` with grouped-query
            attention; each serves ``n_heads // n_kv_heads`` consecutive query heads).
        d_head: width of one head.
        d_ff: hidden width of the position-wise FFN (0: the model has none, a recurrent one).
        n_encoder_layers, n_decoder_layers: layers per stack (0 where a stack is absent).
    """

    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_ff: int
    n_encoder_layers: int
    n_decoder_layers: int

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_kv_heads", "d_head"):
            if getattr(self, name) < 1:
                raise ValueError(_("{name} must be positive, not {value}").format(
                    name=name, value=getattr(self, name)))
        if self.d_ff < 0:
            raise ValueError(_("{name} must be 0 or more, not {value}").format(
                name="d_ff", value=self.d_ff))
        if self.n_heads % self.n_kv_heads:
            raise ValueError(_("n_kv_heads={kv_heads} must divide n_heads={heads}").format(
                kv_heads=self.n_kv_heads, heads=self.n_heads))
        if self.n_encoder_layers < 0 or self.n_decoder_layers < 0:
            raise ValueError(_("layer counts must be >= 0"))

    def layers(self, stack: str) -> int:
        """Layers of ``stack`` (``encoder`` or ``decoder``)."""
        return {"encoder": self.n_encoder_layers, "decoder": self.n_decoder_layers}[stack]

    @property
    def group(self) -> int:
        """Query heads per key/value head (1 without grouped-query attention)."""
        return self.n_heads // self.n_kv_heads


# The positional scheme of a model that encodes no positions, a recurrent one: the order of the
# words is the order its cells read them.
RECURRENCE = "recurrence"


@dataclass(frozen=True)
class PositionInfo:
    """How a model encodes positions.

    Args:
        scheme: ``sinusoidal``, ``rope``, ``learned``, ``relative bias``, another name a
            checkpoint's config gives, or :data:`RECURRENCE` (none: a recurrent model).
        rope_theta: RoPE's frequency base (RoPE only).
        max_positions: the longest input the model reads (None: no fixed limit).
        sliding_window: keys more than ``sliding_window - 1`` positions behind a query are
            masked (None: no window).
    """

    scheme: str
    rope_theta: float | None = None
    max_positions: int | None = None
    sliding_window: int | None = None


TOP_K = 5  # the most probable words each generation step records (Step.top_k), every model


@dataclass(frozen=True)
class Step:
    """One generation step (seed 3.4 step 3).

    Args:
        step: 0-based; step t is the query row of the decoder that chose word ``token``.
        token: the word written at this step (``<eos>`` at the end).
        probability: the probability the model gave ``token``.
        top_k: the most probable words, ``((word, probability), ...)``, most probable first.
    """

    step: int
    token: str
    probability: float
    top_k: tuple[tuple[str, float], ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON record of the export format's ``meta["steps"]``."""
        return {"step": self.step, "token": self.token, "probability": self.probability,
                "top_k": [[token, p] for token, p in self.top_k]}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Step:
        """Read a record written by :meth:`to_dict`."""
        return cls(step=int(record["step"]), token=str(record["token"]),
                   probability=float(record["probability"]),
                   top_k=tuple((str(t), float(p)) for t, p in record["top_k"]))


# How a recurrent translator's trace says where its cross-attention comes from (its
# ``meta["capture"]``): Bahdanau's weights recorded at each step, or a single-vector model's read
# of the encoder's last state.
ADDITIVE, LAST_STATE = "additive", "last state"

FACT_KEYS = ("model_type", "d_model", "d_head", "d_ff", "n_encoder_layers",
             "n_decoder_layers", "rope_theta", "max_positions", "sliding_window", "capture")


def model_facts(dims: ModelDims, positions: PositionInfo, model_type: str,
                capture: str = "own") -> dict[str, Any]:
    """The ``meta`` facts every trace carries, the same keys for every model (:data:`FACT_KEYS`).

    Args:
        dims: the model's sizes.
        positions: its positional scheme (the scheme itself is the trace's ``positional``).
        model_type: what the model is built as: ``own``, or the checkpoint config's
            ``model_type`` (``llama``, ``bert``, ...).
        capture: how the weights were captured: ``own`` (the own models' hooks),
            ``recorded`` (queries and keys recorded through transformers' attention interface,
            heads recomputed), ``eager`` (the model's own ``output_attentions``), and for the
            recurrent translators :data:`ADDITIVE` (Bahdanau's weights, recorded at each step)
            or :data:`LAST_STATE` (a single-vector model: no attention, its decoder reads the
            encoder's last state at every step, a weight of 1 on the last word).
    """
    dims_record = asdict(dims)
    facts = {"model_type": model_type,
             **{key: dims_record[key] for key in FACT_KEYS if key in dims_record},
             "rope_theta": positions.rope_theta, "max_positions": positions.max_positions,
             "sliding_window": positions.sliding_window, "capture": capture}
    return {key: facts[key] for key in FACT_KEYS}


def dims_from_facts(meta: dict[str, Any], n_heads: int, n_kv_heads: int) -> ModelDims | None:
    """The :class:`ModelDims` recorded in a trace's ``meta``, or None where it has none."""
    keys = ("d_model", "d_head", "d_ff", "n_encoder_layers", "n_decoder_layers")
    if any(meta.get(key) is None for key in keys):
        return None
    return ModelDims(n_heads=n_heads, n_kv_heads=n_kv_heads,
                     **{key: int(meta[key]) for key in keys})
