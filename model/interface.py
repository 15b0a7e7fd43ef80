"""The written interface of a loaded model: what every adapter offers, whoever built it.

Both adapters implement :class:`LoadedModel`: the own Transformer
(:class:`model.own.adapter.OwnModel`, and the translator) and Hugging Face checkpoints
(:class:`model.hf.adapter.HFModel`). Code outside :mod:`model.loader` never asks which adapter
it holds: whatever works on any model reads this interface. (A page that always loads one
bundled model, such as Translate with own-translator, may use that model's own methods.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from model.meta import Family, ModelDims, PositionInfo, Step

if TYPE_CHECKING:
    import torch

    from model.budget import Lengths
    from model.reading.batch import AttentionBatch
    from model.trace import AttentionTrace

PARAMETER_KINDS = ("attention", "ffn", "embeddings")


@runtime_checkable
class LoadedModel(Protocol):
    """A model ready to trace text.

    Attributes:
        name: the SPEC it was loaded as (a bundled name, hub id or path).
        family: encoder-only, decoder-only or encoder-decoder.
        kinds: the attention kinds its traces hold: its family's (:attr:`Family.kinds`), or
            those of them it has (the recurrent translators: ``("decoder.cross",)``).
        device: where it runs (a model spread over several devices: where its inputs go).
        dtype: the precision of its weights, ``"float32"``, ``"bfloat16"`` or ``"float16"``
            (its traces' weights are float32 whatever it is).
        dims: its sizes (d_model, heads, K/V heads, d_head, d_ff, layers per stack).
        positions: its positional scheme and that scheme's parameters.
        module: the whole torch module (every parameter).
    """

    name: str
    family: Family
    device: torch.device
    dtype: str
    dims: ModelDims
    positions: PositionInfo

    @property
    def kinds(self) -> tuple[str, ...]:
        """The attention kinds its traces hold, in stack order."""
        ...

    @property
    def module(self) -> torch.nn.Module:
        """The torch module holding every parameter."""
        ...

    def parameter_modules(self) -> Mapping[str, Sequence[torch.nn.Module]]:
        """The modules whose parameters are of each kind in :data:`PARAMETER_KINDS`
        (``attention``, ``ffn``, ``embeddings``); every other parameter of :attr:`module` is
        of none of them (norms, output head)."""
        ...

    def position_embeddings(self, n_positions: int) -> tuple[str, np.ndarray] | None:
        """Learned absolute position vectors: ``(parameter name, the first n_positions
        vectors [position, d_model])``, or None when the model learns none."""
        ...

    def position_table(self, n_positions: int) -> np.ndarray | None:
        """The seed's fixed sinusoidal table ``[position, d_model]`` when the model adds it to
        its embeddings (the own models), else None."""
        ...

    def count_tokens(self, text: str, target: str | None = None) -> Lengths:
        """The token counts a trace of ``text`` (and ``target``) would run on, without running
        the model (:class:`~model.budget.Lengths`)."""
        ...

    def memory_needed(self, n: Lengths) -> int:
        """The peak bytes of a trace of ``n`` tokens and of a page computing one layer of it:
        checked against a server's limit before anything runs (:mod:`model.budget`)."""
        ...

    def attention_batch(self, texts: list[str]) -> AttentionBatch:
        """Run ``texts`` together (one padded batch where the model allows it) for statistics
        over many sentences: a trace per text and every text's weights of a layer at once,
        padding left out (:class:`~model.reading.batch.AttentionBatch`). An encoder-decoder
        traces its own output for each text."""
        ...

    def trace(self, text: str, target: str | None = None) -> AttentionTrace:
        """Run the model on ``text`` and capture every attention pattern.

        Args:
            text: the input (single-stack: the whole prompt; encoder-decoder: the source).
            target: encoder-decoder only: teacher-forced target text; None traces the
                model's own output.
        """
        ...


@dataclass(frozen=True)
class Generation:
    """Greedy generation with a KV cache, one token per step (seed 3.4 step 3 and 3.8), with
    the size of the cache measured from its tensors after every step.

    Step 1 reads everything the model has before it writes (a decoder-only model's prompt, an
    encoder-decoder's ``<bos>``) and writes the first token; every later step reads the token
    written before it, adds its keys and values to the cache and writes one more.

    Attributes:
        model: the SPEC of the model that generated.
        prompt_tokens: what the model read before generating: the prompt (decoder-only) or
            the source sentence (encoder-decoder), display tokens.
        steps: one :class:`~model.meta.Step` per step: the token written, its probability and
            the most probable tokens.
        cached_tokens: ``[step]``: tokens in each decoder layer's self-attention cache after
            the step (the step's query rows end there).
        self_cache_bytes: ``[step, layer]`` int64: bytes of the keys and values that each
            decoder layer's self-attention holds after the step, read from the cache tensors.
        cross_cache_bytes: ``[layer]`` int64: bytes of each decoder layer's cross-attention keys
            and values, computed once from the encoder's output before step 1 and reused by
            every step (all zeros for a decoder-only model).
        bytes_per_element: the size of one cached number (4 for float32).
        trace: the attention of the decoder over every token it read, in one causal pass
            (decoder-only: the prompt then the tokens written; encoder-decoder: ``<bos>`` then
            the tokens written, with the source): its first ``cached_tokens[s - 1]`` query rows
            are what steps 1..s computed.
    """

    model: str
    prompt_tokens: tuple[str, ...]
    steps: tuple[Step, ...]
    cached_tokens: np.ndarray
    self_cache_bytes: np.ndarray
    cross_cache_bytes: np.ndarray
    bytes_per_element: int
    trace: AttentionTrace

    def __post_init__(self) -> None:
        n = len(self.steps)
        cached = np.asarray(self.cached_tokens, dtype=np.int64)
        self_bytes = np.asarray(self.self_cache_bytes, dtype=np.int64)
        cross = np.asarray(self.cross_cache_bytes, dtype=np.int64)
        if cached.shape != (n,) or self_bytes.ndim != 2 or self_bytes.shape[0] != n:
            raise ValueError(f"{n} steps, {cached.shape} token counts and "
                             f"{self_bytes.shape} cache sizes disagree")
        if cross.shape != self_bytes.shape[1:]:
            raise ValueError(f"{cross.shape} cross-attention sizes for "
                             f"{self_bytes.shape[1]} layers")
        for name, array in (("cached_tokens", cached), ("self_cache_bytes", self_bytes),
                            ("cross_cache_bytes", cross)):
            array.setflags(write=False)  # shared by every session of a server
            object.__setattr__(self, name, array)
        object.__setattr__(self, "prompt_tokens", tuple(self.prompt_tokens))
        object.__setattr__(self, "steps", tuple(self.steps))


@runtime_checkable
class Generates(Protocol):
    """A model that writes greedily with a KV cache and measures the cache as it grows
    (own-translator, decoder-only Hugging Face models)."""

    def generate(self, text: str, max_new_tokens: int | None = None) -> Generation:
        """Write up to ``max_new_tokens`` tokens (fewer when the end token comes first)
        after ``text`` (decoder-only: the prompt; encoder-decoder: the source), greedily.

        Raises:
            ValueError: the text is empty or the model cannot read it, or the model does not
                generate this way (an encoder-only model).
        """
        ...


@runtime_checkable
class Intervenes(Protocol):
    """A model whose attention's parts can be read and changed for the "What moves" view
    (:mod:`model.analysis.moves`): the own models through their hook points, Hugging Face models
    whose attention runs through the recording function. Each method raises
    :class:`~model.errors.CaptureError` saying why where a model does not allow it.

    An adapter that subclasses it names the module doing the work as ``_moves``
    (:mod:`model.own.moves`, :mod:`model.hf.moves`), whose functions take the adapter first.
    """

    _moves: object

    def attention_parts(self, text: str, target: str | None = None):
        """Values, output projections, queries and keys of one pass
        (:class:`~model.analysis.faithfulness.AttentionParts`)."""
        return self._moves.attention_parts(self, text, target)

    def layer_outputs(self, text: str, kind: str, layer: int, zero_keys: list[int],
                      target: str | None = None) -> np.ndarray:
        """``[1 + len(zero_keys), query, d_model]``: the layer holding ``kind``'s attention
        ``layer``, unchanged and with each key's value zeroed in every head."""
        return self._moves.layer_outputs(self, text, kind, layer, zero_keys, target)

    def ablation(self, text: str, kind: str, layer: int, heads: list[int],
                 target: str | None = None):
        """What leaving ``heads`` out of ``kind``'s ``layer`` changes
        (:class:`~model.analysis.faithfulness.Ablation`)."""
        return self._moves.ablation(self, text, kind, layer, heads, target)
