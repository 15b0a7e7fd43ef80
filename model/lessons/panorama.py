"""Numbers of the lesson §5.1–5.2, the panorama: the text's table of RNN, LSTM, GRU and
Transformer beside what this project measures on its own models (lesson 3.6's measurements,
:mod:`model.lessons.rnn`) and counts on real torch modules.

- :func:`layer_parameters`: the parameters of one layer of each kind at the same width (the
  table's "constant ×4" and "×3" are LSTM's four and GRU's three gates' matrices), and the
  multiply-adds of a layer over n words (n·d² for every kind, plus n²·d for attention);
- :func:`path_lengths`: the longest information path (sequential steps a word's signal crosses
  to reach the last position) for each architecture, by length (insight one of §5.2);
- :func:`measured`: the table's rows as this server measured them (:class:`Measured`).
- :func:`module_kinds`: the kinds of module the own translator is built of (insight three).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import nn

from i18n import _
from model.lessons.rnn import TIMED_LENGTHS, Forgetting, GradientProfile, Timing, long_inputs
from model.own.config import TransformerConfig
from model.own.transformer import EncoderLayer

ARCHITECTURES = ("RNN", "LSTM", "GRU", "Transformer")
# The own model that stands for each architecture (no LSTM was trained: its cells are counted)
MODEL_OF = {"RNN": "own-rnn", "GRU": "own-gru", "Transformer": "own-translator"}
CELLS = {"RNN": nn.RNNCell, "LSTM": nn.LSTMCell, "GRU": nn.GRUCell}
RECORDERS = {"HookPoint"}  # model.own.hooks: identity modules where the trace is read
PROFILE_TEXTS = tuple(long_inputs())  # the texts lesson 3.6's gradient profile reads
__all__ = ["ARCHITECTURES", "MODEL_OF", "PROFILE_TEXTS", "TIMED_LENGTHS", "Layers", "Measured",
           "Paths", "layer_parameters", "measured", "module_kinds", "path_lengths"]


@dataclass(frozen=True)
class Layers:
    """One layer of each architecture at width ``d``, counted on the torch modules.

    Attributes:
        d: the width (a cell reads ``d`` numbers and keeps ``d``; the Transformer layer is
            ``d_model = d`` with ``d_ff = 4d``).
        parameters: ``{architecture: parameters}`` of ``nn.RNNCell``, ``nn.LSTMCell``,
            ``nn.GRUCell`` and the own :class:`~model.own.transformer.EncoderLayer`.
        n: the words a layer reads for :attr:`multiply_adds`.
        multiply_adds: ``{architecture: count}`` over ``n`` words: every weight once per word
            (n·d² up to a constant), and for the Transformer also the two n × n products of
            attention (2·n²·d).
    """

    d: int
    parameters: dict[str, int]
    n: int
    multiply_adds: dict[str, int]

    def ratio(self, name: str) -> float:
        """``name``'s parameters over the plain RNN cell's."""
        return self.parameters[name] / self.parameters["RNN"]


def layer_parameters(d: int, n: int) -> Layers:
    """:class:`Layers` at width ``d`` over ``n`` words.

    Raises:
        ValueError: a width or length below 1.
    """
    if d < 1 or n < 1:
        raise ValueError(_("the width and the length must be at least 1"))
    modules = {name: cell(d, d) for name, cell in CELLS.items()}
    modules["Transformer"] = EncoderLayer(TransformerConfig(
        src_vocab_size=2, tgt_vocab_size=2, d_model=d, n_heads=1, n_encoder_layers=1,
        n_decoder_layers=1, d_ff=4 * d, dropout=0.0))
    parameters = {name: sum(p.numel() for p in module.parameters())
                  for name, module in modules.items()}
    weights = {name: sum(p.numel() for p in module.parameters() if p.dim() == 2)
               for name, module in modules.items()}
    adds = {name: n * count for name, count in weights.items()}
    adds["Transformer"] += 2 * n * n * d
    return Layers(d, parameters, n, adds)


@dataclass(frozen=True)
class Paths:
    """The fewest sequential steps by which the first word's signal reaches where the output is
    read, by length: one definition for all three (entering the first state counts as a step).

    Attributes:
        lengths: ``[n]`` sentence lengths.
        recurrent: ``[n]`` an RNN (LSTM, GRU) without attention: into h₁, then one step per
            later word to the last state h_n, which is all the decoder reads: n.
        attention_rnn: ``[n]`` an RNN encoder with attention (Bahdanau): into h₁, then the
            decoder reads h₁ directly ("skimming"): 2, whatever n (between two source words
            the encoder's chain stays n − 1).
        transformer: ``[n]`` self-attention: any position reads any other in one step of any
            layer: 1.
    """

    lengths: np.ndarray
    recurrent: np.ndarray
    attention_rnn: np.ndarray
    transformer: np.ndarray


def path_lengths(lengths) -> Paths:
    """:class:`Paths` for each of ``lengths``.

    Raises:
        ValueError: no length, or a length below 1.
    """
    n = np.asarray(lengths, dtype=np.int64)
    if n.size == 0 or n.min() < 1:
        raise ValueError(_("lengths must be at least 1"))
    return Paths(n, n.copy(), np.full_like(n, 2), np.ones_like(n))


@dataclass(frozen=True)
class Measured:
    """The §5.1 table's rows as this server measured them; None where an architecture was not
    measured (no LSTM was trained; only the GRU of the recurrent models is timed).

    Attributes:
        growth: ``{architecture: time at the longest length / time at the shortest}`` of one
            encoder pass (:attr:`lengths`), None where not timed.
        lengths: the shortest and longest length timed.
        exact_longest: ``{architecture: exact match on the longest held-out sentences}``.
        longest: the words of those sentences, ``(first, last)``.
        far_over_near: ``{architecture: the gradient's median at far words ÷ at near ones}``
            (:meth:`~model.lessons.rnn.GradientProfile.far_over_near`).
        device: where the timing ran.
        timed: every length timed.
        per_token: ``{"GRU" | "Transformer": [seconds per token at each timed length]}``.
    """

    growth: dict[str, float | None]
    lengths: tuple[int, int]
    exact_longest: dict[str, float | None]
    longest: tuple[int, int]
    far_over_near: dict[str, float | None]
    device: str
    timed: tuple[int, ...]
    per_token: dict[str, tuple[float, ...]]

    def cheapest(self, name: str) -> int:
        """The timed length at which ``name``'s pass cost least per token."""
        return self.timed[int(np.argmin(self.per_token[name]))]


def measured(forgetting: Forgetting, profile: GradientProfile, timing: Timing) -> Measured:
    """The :class:`Measured` rows from lesson 3.6's measurements."""
    far = int(np.argmax([last for _first, last in forgetting.bins]))
    growth = {name: None for name in ARCHITECTURES}
    growth["GRU"] = timing.gru[-1] / timing.gru[0]
    growth["Transformer"] = timing.transformer[-1] / timing.transformer[0]
    return Measured(
        growth=growth, lengths=(timing.lengths[0], timing.lengths[-1]),
        exact_longest={name: forgetting.exact_match[MODEL_OF[name]][far]
                       if name in MODEL_OF else None for name in ARCHITECTURES},
        longest=forgetting.bins[far],
        far_over_near={name: profile.far_over_near(MODEL_OF[name]) if name in MODEL_OF
                       else None for name in ARCHITECTURES},
        device=timing.device, timed=tuple(timing.lengths),
        per_token={name: tuple(t / n for t, n in zip(times, timing.lengths))
                   for name, times in (("GRU", timing.gru), ("Transformer", timing.transformer))})


def module_kinds(network: nn.Module) -> dict[str, int]:
    """How many modules of each torch class ``network`` is built of (insight three: a few
    simple kinds, composed), leaves only, most frequent first; the explorer's own recording
    points (:data:`RECORDERS`, which compute nothing) left out."""
    counts: dict[str, int] = {}
    for module in network.modules():
        if type(module).__name__ not in RECORDERS and not any(True for _c in module.children()):
            counts[type(module).__name__] = counts.get(type(module).__name__, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
