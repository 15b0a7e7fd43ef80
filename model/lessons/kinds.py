"""Numbers of the lesson §4.7, the three kinds of attention, derived from one encoder-decoder
trace (numpy only).

The lesson's table says, for each kind, who asks (Q), whose dictionary it reads (K/V) and
whether it may look ahead. :func:`three_kinds` answers each from the trace itself: the token
axes of the kind's queries and keys, its shape ``[queries × keys]``, and whether the weights
above the diagonal are exactly zero in every layer and head (then it may not look ahead).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.analysis.cuts import query_rows
from model.meta import Family
from model.trace import AttentionTrace

KINDS = ("encoder.self", "decoder.self", "decoder.cross")


@dataclass(frozen=True)
class KindView:
    """One kind of attention in one trace, and its row of the lesson's table.

    Attributes:
        name: ``encoder.self``, ``decoder.self`` or ``decoder.cross``.
        query_axis, key_axis: the token axes of its queries and of its keys and values
            (``source`` or ``target``).
        from_encoder: its keys and values are the encoder's output (its stack is the decoder,
            its keys the source).
        shape: ``(queries, keys)``.
        upper_zero: every weight above the diagonal is exactly 0 in every layer and head
            (None: a cross-attention, whose two axes are different sequences, or one token).
        looks_ahead: the weights reach later positions (``not upper_zero``; None where
            ``upper_zero`` is None).
        weights: ``[query, key]`` the chosen head's weights.
        allowed: bool ``[query, key]``: the kind's mask.
        query_labels, query_hover, key_labels: the axes (decoder rows named by the word they
            write).
        special: special tokens on the query and key axes.
    """

    name: str
    query_axis: str
    key_axis: str
    from_encoder: bool
    shape: tuple[int, int]
    upper_zero: bool | None
    looks_ahead: bool | None
    weights: np.ndarray
    allowed: np.ndarray
    query_labels: list[str]
    query_hover: list[str]
    key_labels: list[str]
    special: tuple[list[int], list[int]]


def upper_triangle_zero(stack: np.ndarray) -> bool | None:
    """Whether every weight strictly above the diagonal of every ``[layer, head]`` is exactly 0.

    Args:
        stack: ``[layer, head, query, key]`` weights.

    Returns:
        True or False; None when the matrices have no cell above the diagonal.
    """
    n_q, n_k = stack.shape[-2:]
    above = np.triu(np.ones((n_q, n_k), dtype=bool), k=1)  # [query, key]
    if not above.any():
        return None
    return bool(np.all(stack[..., above] == 0))


def kind_view(trace: AttentionTrace, name: str, layer: int, head: int) -> KindView:
    """One kind's row of the table and its chosen head.

    Args:
        trace: an encoder-decoder trace; ``name``: one of :data:`KINDS`.
        layer, head: the head shown.

    Returns:
        a :class:`KindView`.
    """
    query_axis, key_axis = trace.family.axes(name)
    weights = trace.weights(name, layer, head)
    upper = upper_triangle_zero(trace.stack(name)) if query_axis == key_axis else None
    rows = query_rows(trace, name)
    return KindView(
        name=name, query_axis=query_axis, key_axis=key_axis,
        from_encoder=name.startswith("decoder.") and key_axis == "source",
        shape=(int(weights.shape[0]), int(weights.shape[1])), upper_zero=upper,
        looks_ahead=None if upper is None else not upper, weights=weights,
        allowed=np.asarray(trace.mask(name, layer), dtype=bool),
        query_labels=list(rows.labels), query_hover=list(rows.hover),
        key_labels=[str(t) for t in trace.axes(name)[1]],
        special=(list(rows.special), list(trace.special(name)[1])))


def three_kinds(trace: AttentionTrace, layer: int, head: int) -> list[KindView]:
    """The three kinds of an encoder-decoder trace, in the lesson's order, each at ``layer``
    and ``head``.

    Raises:
        ValueError: the trace is not an encoder-decoder's.
    """
    if trace.family is not Family.ENCODER_DECODER:
        raise ValueError(f"the three kinds live in an encoder-decoder, not {trace.family}")
    return [kind_view(trace, name, layer, head) for name in KINDS]
