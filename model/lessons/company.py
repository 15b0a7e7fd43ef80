"""Numbers of the lesson §3.1, a translation company, read from the own translator's run.

The lesson's picture is the encoder-decoder: a reading team (the encoder) reads every source
word at once and leaves one note per word (the encoder's output, ``[S, d_model]``); a writing
team (the decoder) writes one word per step and, for each word, looks back over all the notes
(cross-attention). :func:`company_of` reads each of these from one run: the notes by a hook on
the encoder (:func:`.network.run`), the written words and the cross-attention from the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.analysis.cuts import query_rows
from model.lessons.network import own_network, run, to_numpy
from model.meta import Family
from model.own.hooks import hook_name
from model.trace import AttentionTrace

CROSS = "decoder.cross"


@dataclass(frozen=True)
class Company:
    """The translation company of one run of the own translator.

    Attributes:
        source_words: the words the reading team reads, ``S`` of them.
        notes: the encoder's output, float64 ``[S, d_model]``: one note per source word.
        notes_shape: the shape of the encoder's output tensor as the model returned it,
            ``(B, S, d_model)``.
        encoder_layers: how many times the reading team meets (encoder layers).
        written: the words the writing team wrote, one per decoder step (the last is the end
            token); ``written_hover`` names each step (position, word written, word read).
        layer: the decoder layer whose cross-attention is shown (the last one).
        cross: that layer's cross-attention averaged over its heads, ``[T, S]`` (row t: the
            step that writes ``written[t]``; rows sum to 1).
        discussion: the last encoder layer's self-attention averaged over heads, ``[S, S]``
            (row i: how note i read the other words).
    """

    source_words: list[str]
    notes: np.ndarray
    notes_shape: tuple[int, ...]
    encoder_layers: int
    written: list[str]
    written_hover: list[str]
    layer: int
    cross: np.ndarray
    discussion: np.ndarray

    @property
    def d_model(self) -> int:
        """The width of one note."""
        return int(self.notes.shape[1])

    def top_note(self, step: int) -> int:
        """The source word whose note step ``step`` reads most (the first of equal ones)."""
        return int(np.argmax(self.cross[int(step)]))


def company_of(loaded, trace: AttentionTrace) -> Company:
    """Read the company of one run: the encoder's output by a hook on the encoder, re-run on
    the trace's ids; the written words and the last decoder layer's cross-attention (mean over
    heads) from the trace.

    Args:
        loaded: an own encoder-decoder model; ``trace``: a trace of it.

    Returns:
        a :class:`Company`.

    Raises:
        ValueError: the model is not an own encoder-decoder.
    """
    if trace.family is not Family.ENCODER_DECODER:
        raise ValueError(f"the company needs an encoder-decoder trace, not {trace.family}")
    network = own_network(loaded)
    store, _logits = run(loaded, trace, [network.encoder])
    memory = store[hook_name(network.encoder)]  # [batch, source, d_model]
    last = trace.layers(CROSS) - 1
    rows = query_rows(trace, CROSS)
    encoder_last = trace.layers("encoder.self") - 1
    return Company(
        source_words=[str(t) for t in trace.source_tokens], notes=to_numpy(memory[0]),
        notes_shape=tuple(int(n) for n in memory.shape),
        encoder_layers=trace.layers("encoder.self"), written=list(rows.labels),
        written_hover=list(rows.hover), layer=last,
        cross=trace.mean_weights(CROSS, last).astype(np.float64),
        discussion=trace.mean_weights("encoder.self", encoder_last).astype(np.float64))


def default_step(company: Company) -> int:
    """The step shown first: the fourth word written (垫子 in the lesson's sentence), or the
    last real word of a shorter translation."""
    return max(0, min(3, len(company.written) - 2))
