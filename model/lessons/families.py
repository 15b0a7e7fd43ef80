"""Numbers of the lesson §3.7, the three families side by side (numpy only).

:func:`family_view` holds one family's mask and one head for the side-by-side lesson, and
:func:`telling_head` finds the head that shows best what the family lets a token see.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.analysis.cuts import query_rows
from model.meta import Family
from model.trace import AttentionTrace

# The kind each family's lesson column shows: what that family alone has.
FAMILY_KINDS = {Family.ENCODER_ONLY: "encoder.self", Family.DECODER_ONLY: "decoder.self",
                Family.ENCODER_DECODER: "decoder.cross"}


@dataclass(frozen=True)
class FamilyView:
    """One family's column: its mask and one head of the kind only it has.

    Attributes:
        kind: ``encoder.self``, ``decoder.self`` or ``decoder.cross``.
        allowed: bool ``[query, key]``: where the model may attend.
        weights: ``[query, key]`` the head's weights.
        query_labels, key_labels, query_hover, query_title: the axes.
        special: special tokens on the query and key axes.
        seen: cells the mask allows; ``cells``: every cell.
    """

    kind: str
    allowed: np.ndarray
    weights: np.ndarray
    query_labels: list[str]
    key_labels: list[str]
    query_hover: list[str]
    query_title: str
    special: tuple[list[int], list[int]]
    seen: int
    cells: int


def family_kind(trace: AttentionTrace) -> str:
    """The kind the families lesson shows for ``trace``'s family."""
    return FAMILY_KINDS[trace.family]


def telling_head(trace: AttentionTrace, kind: str) -> tuple[int, int]:
    """``(layer, head)`` of the head that shows best what ``kind`` lets a token see, over
    every layer (special tokens such as ``[CLS]``/``[SEP]`` and the first token, where many
    heads park their weight, left out):

    - ``encoder.self``: the most weight on words to the right of each token, which only a
      bidirectional encoder can read;
    - ``decoder.self``: the most weight on earlier words (the causal mask allows no other);
    - ``decoder.cross``: the most source words that are some row's peak (an alignment rather
      than every row on one word), then the sharpest peaks.
    """
    n_q, n_k = (len(t) for t in trace.axes(kind))
    plain = np.ones(n_k, dtype=bool)
    plain[list(trace.special(kind)[1])] = False
    if kind.endswith(".self"):
        plain[0] = False
    later = np.triu(np.ones((n_q, n_k), dtype=bool), k=1) & plain  # [query, key]
    earlier = np.tril(np.ones((n_q, n_k), dtype=bool), k=-1) & plain

    def score(w: np.ndarray) -> float:
        if kind == "encoder.self":
            return float(np.where(later, w, 0).sum(axis=1).mean())
        if kind == "decoder.self":
            return float(np.where(earlier, w, 0).sum(axis=1).mean())
        peaks = w.argmax(axis=1)
        return len(set(peaks.tolist())) + float(w.max(axis=1).mean())

    scores = {(layer, head): score(trace.weights(kind, layer, head))
              for layer in range(trace.layers(kind)) for head in range(trace.n_heads)}
    return max(scores, key=scores.get)


def family_view(trace: AttentionTrace, layer: int, head: int, kind: str | None = None
                ) -> FamilyView:
    """One head and the mask of ``kind`` (default: the kind only ``trace``'s family has)."""
    kind = kind or family_kind(trace)
    allowed = np.asarray(trace.mask(kind, layer), dtype=bool)
    rows = query_rows(trace, kind)
    q_special, k_special = trace.special(kind)
    return FamilyView(kind=kind, allowed=allowed, weights=trace.weights(kind, layer, head),
                      query_labels=list(rows.labels), key_labels=list(trace.axes(kind)[1]),
                      query_hover=list(rows.hover), query_title=rows.title,
                      special=(list(rows.special), list(k_special)),
                      seen=int(allowed.sum()), cells=int(allowed.size))
