"""Numbers of the lesson §3.4 "Who looks at whom" on the own translator.

The lesson's claims (sat → cat and mat, the → mat, it → cat, 垫子 → mat) are found in a trace:
:func:`find_pair` returns the layer and head where a pair's weight is largest, computed from
every head, never a head fixed in advance; where several heads are as large (:data:`TIE`), the
first of them, layer by layer and head by head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from i18n import _
from model.analysis.cuts import query_rows
from model.trace import AttentionTrace

SAT_SENTENCE = "The cat sat on the mat"
IT_SENTENCE = "The cat chased the mouse because it was hungry"  # §4.1: 猫 追 老鼠 ， 因为 它 饿 了
# Heads whose weight for a pair is within this of the largest are as large: the lesson's grid
# writes three decimals, and heads whose softmax saturates differ by float rounding only
# (垫子 → mat is 0.99999 to 1.00000 in all four heads of the translator's last layer, the
# largest by 2e-7 in the second: not a head to prefer over the first).
TIE = 5e-4


@dataclass(frozen=True)
class Claim:
    """A claim of the lesson: in ``sentence``, ``query`` looks at ``key``.

    Attributes:
        id: a short name (widget keys).
        sentence: the English sentence the own translator reads.
        query: the word looking: a source word (encoder self-attention) or, for
            cross-attention, the Chinese word being written.
        key: the source word looked at.
        kind: ``encoder.self`` or ``decoder.cross``.
        occurrence: which occurrence of ``query`` (0: the first; "the" → mat is the second
            "the").
    """

    id: str
    sentence: str
    query: str
    key: str
    kind: str
    occurrence: int = 0

    @property
    def label(self) -> str:
        return f"{self.query} → {self.key}"


CLAIMS = (
    Claim("sat_cat", SAT_SENTENCE, "sat", "cat", "encoder.self"),
    Claim("sat_mat", SAT_SENTENCE, "sat", "mat", "encoder.self"),
    Claim("the_mat", SAT_SENTENCE, "the", "mat", "encoder.self", occurrence=1),
    Claim("it_cat", IT_SENTENCE, "it", "cat", "encoder.self"),
    Claim("dianzi_mat", SAT_SENTENCE, "垫子", "mat", "decoder.cross"),
)
CONTRAST = Claim("it_mouse", IT_SENTENCE, "it", "mouse", "encoder.self")


@dataclass(frozen=True)
class Found:
    """Where a pair's weight is largest in a trace.

    Attributes:
        claim: the pair.
        layer, head: the head with the largest weight (the first of :attr:`ties`).
        query, key: the cell (row and column) of the pair in that kind's heatmap.
        weight: the weight there.
        grid: the pair's weight in every head, ``[layer, head]``.
        query_label, key_label: the row's and the column's names, as Explore labels them.
        ties: every ``(layer, head)`` as large as the largest (within :data:`TIE`), layer by
            layer and head by head.
    """

    claim: Claim
    layer: int
    head: int
    query: int
    key: int
    weight: float
    grid: np.ndarray
    query_label: str
    key_label: str
    ties: tuple[tuple[int, int], ...] = ()


def _position(labels, word: str, occurrence: int, where: str) -> int:
    """Where the ``occurrence``-th ``word`` stands in ``labels`` (case-insensitive)."""
    hits = [i for i, label in enumerate(labels) if str(label).lower() == word.lower()]
    if len(hits) <= occurrence:
        raise ValueError(_("“{word}” is not in {where}").format(word=word, where=where))
    return hits[occurrence]


def pair_cell(trace: AttentionTrace, claim: Claim) -> tuple[int, int]:
    """The (row, column) of ``claim``'s pair in its kind's heatmap; cross-attention rows are
    named by the word written (:func:`~model.analysis.cuts.query_rows`)."""
    rows = query_rows(trace, claim.kind).labels
    keys = list(trace.axes(claim.kind)[1])
    where = " ".join(str(label) for label in rows)
    query = _position(rows, claim.query, claim.occurrence, where)
    key = _position(keys, claim.key, 0, " ".join(str(k) for k in keys))
    return query, key


def pair_weights(trace: AttentionTrace, kind: str, query: int, key: int) -> np.ndarray:
    """One cell's weight in every head of every layer: ``[layer, head]``."""
    return np.stack([trace.layer_weights(kind, layer)[:, query, key]  # [head]
                     for layer in range(trace.layers(kind))])


def find_pair(trace: AttentionTrace, claim: Claim) -> Found:
    """The layer and head where ``claim``'s pair has its largest weight in ``trace``: the
    first, layer by layer and head by head, of those as large as the largest (:data:`TIE`).

    Raises:
        ValueError: a word of the pair is not in the trace (e.g. the translation does not
            write 垫子).
    """
    query, key = pair_cell(trace, claim)
    grid = pair_weights(trace, claim.kind, query, key)
    ties = tuple((int(layer), int(head))  # argwhere: in row-major order, layer by layer
                 for layer, head in np.argwhere(grid >= grid.max() - TIE))
    layer, head = ties[0]
    return Found(claim, layer, head, query, key, float(grid[layer, head]), grid,
                 str(query_rows(trace, claim.kind).labels[query]),
                 str(trace.axes(claim.kind)[1][key]), ties)
