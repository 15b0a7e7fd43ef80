"""The written interface of a loaded model: what every adapter offers, whoever built it.

Both adapters implement :class:`LoadedModel`: the own Transformer
(:class:`model.own.adapter.OwnModel`, and the translator) and Hugging Face checkpoints
(:class:`model.hf.adapter.HFModel`). Code outside :mod:`model.loader` never asks which adapter
it holds: whatever works on any model reads this interface. (A page that always loads one
bundled model, such as Translate with own-translator, may use that model's own methods.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .facts import Family, ModelDims, PositionInfo

if TYPE_CHECKING:
    import numpy as np
    import torch

    from .budget import Lengths
    from .trace import AttentionTrace

PARAMETER_KINDS = ("attention", "ffn", "embeddings")


@runtime_checkable
class LoadedModel(Protocol):
    """A model ready to trace text.

    Attributes:
        name: the SPEC it was loaded as (a bundled name, hub id or path).
        family: encoder-only, decoder-only or encoder-decoder.
        device: where it runs.
        dims: its sizes (d_model, heads, K/V heads, d_head, d_ff, layers per stack).
        positions: its positional scheme and that scheme's parameters.
        module: the whole torch module (every parameter).
    """

    name: str
    family: Family
    device: torch.device
    dims: ModelDims
    positions: PositionInfo

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

    def trace(self, text: str, target: str | None = None) -> AttentionTrace:
        """Run the model on ``text`` and capture every attention pattern.

        Args:
            text: the input (single-stack: the whole prompt; encoder-decoder: the source).
            target: encoder-decoder only: teacher-forced target text; None traces the
                model's own output.
        """
        ...
