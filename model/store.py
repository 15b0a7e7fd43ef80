"""Where a trace keeps one attention kind: the :class:`AttentionStore` interface and its dense,
in-memory implementation.

A store answers for ``[layer, head, query, key]`` weights, a layer's mask and a head's scores.
It may hold every weight (:class:`DenseStore`: the own models, a loaded export) or compute a
head when asked from what the capture recorded (:class:`model.hf.capture.LazyAttention`); what
it returns is exact either way. :class:`model.trace.AttentionTrace` reads every store through
this one interface.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from i18n import N_, _

NO_SCORES = N_("this trace holds no scores (an export keeps weights only); run the model again "
               "to see them")


class IndexOutOfRange(IndexError, ValueError):
    """An index (layer, head, position) outside its valid range; the message names the range.

    Both an :class:`IndexError` and, as before, a :class:`ValueError`.
    """


def check_index(value, size: int, what: str, of: str = "") -> int:
    """``value`` as a plain int in ``0..size - 1``; negative indices are refused.

    Args:
        value: a Python int or a numpy integer (never a bool).
        size: how many there are.
        what: what it indexes (``"layer"``, ``"head"``), for the message, in the current
            language.
        of: what holds them, for the message (``"decoder.self has 6 layers"``), likewise.

    Raises:
        TypeError: ``value`` is not an integer (a bool, a float, a string, None, ...).
        IndexOutOfRange: ``value`` is outside ``0..size - 1``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__} {value!r}")
    value = int(value)
    if not 0 <= value < size:
        if size > 0 and of:
            message = _("{what} {value} is out of range 0..{last} ({of})")
        elif size > 0:
            message = _("{what} {value} is out of range 0..{last}")
        elif of:
            message = _("{what} {value} is out of range: there is none ({of})")
        else:
            message = _("{what} {value} is out of range: there is none")
        raise IndexOutOfRange(message.format(what=what, value=value, last=size - 1, of=of))
    return value


BLOCK_BYTES = 8 << 20  # weights of one block, [head, rows, keys] float32 (cache-sized)
MIN_ROWS = 64  # rows of a block at least, however long the rows (a long input's blocks grow)


@dataclass(frozen=True)
class Block:
    """Weights of query rows ``start .. start + rows`` of some heads of a layer.

    ``weights`` is ``[head, rows, keys]`` float32: a numpy view for a store that holds its
    weights, a torch tensor on the model's device for one that computes them
    (:mod:`model.reading.blocks` reads both). Keys from ``weights.shape[-1]`` on are exactly 0: a
    causal block stops at the last key its rows may see.
    """

    start: int
    weights: Any

    @property
    def stop(self) -> int:
        return self.start + self.weights.shape[1]


def rows_per_block(heads: int, keys: int, budget: int = BLOCK_BYTES, align: int = 1) -> int:
    """Query rows per block so that ``[heads, rows, keys]`` float32 holds about ``budget``
    bytes, and at least :data:`MIN_ROWS` (for :data:`BLOCK_BYTES`): the multiple of
    ``align`` nearest to it (at least ``align``). Few rows make many small blocks: at 8,192
    keys a pass over smollm2's heads took 1.3 s a layer with blocks of 16 rows, 1.0 s with 32
    and 0.91 s with 48 or 64."""
    least = MIN_ROWS * budget // BLOCK_BYTES  # in proportion to a smaller budget (tests)
    rows = max(1, least, budget // (4 * max(1, heads) * max(1, keys)))
    return max(align, round(rows / align) * align)  # the nearest multiple: a little over


def row_slices(rows: range, per_block: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive blocks of ``rows``."""
    for start in range(rows.start, rows.stop, per_block):
        yield start, min(start + per_block, rows.stop)


def readonly(array: np.ndarray) -> np.ndarray:
    """``array`` as a numpy array that refuses writes."""
    array = np.asarray(array)
    array.setflags(write=False)
    return array


@runtime_checkable
class AttentionStore(Protocol):
    """One attention kind of a trace, ``[layer, head, query, key]``.

    :class:`model.trace.AttentionTrace` checks every layer and head (with :func:`check_index`)
    before it asks a store, so a store may assume valid indices; :class:`DenseStore` checks
    them again for callers that use it directly.
    """

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(layers, heads, queries, keys)``."""
        ...

    def __getitem__(self, index: tuple[int, int]) -> np.ndarray:
        """Weights of head ``index = (layer, head)``: float32 ``[query, key]``, rows sum to 1."""
        ...

    def layer(self, layer: int) -> np.ndarray:
        """Every head of one layer: float32 ``[head, query, key]``."""
        ...

    def stack(self) -> np.ndarray:
        """Every layer and head: float32 ``[layer, head, query, key]``."""
        ...

    def blocks(self, layer: int, heads=None, rows: range | None = None,
               budget: int = BLOCK_BYTES, align: tuple[int, int] = (1, 1)) -> Iterator[Block]:
        """The weights of ``heads`` (default all) of one layer in blocks of query ``rows``
        (default all), each a :class:`Block` of about ``budget`` bytes (at least
        :data:`MIN_ROWS` rows for the default budget, see :func:`rows_per_block`);
        ``align``: each block holds a multiple of ``align[0]`` rows (the last one excepted)
        and a multiple of ``align[1]`` keys (or every key)."""
        ...

    def mask(self, layer: int) -> np.ndarray:
        """Where layer ``layer`` may attend: bool ``[query, key]`` (True = allowed)."""
        ...

    def scores(self, layer: int, head: int) -> np.ndarray:
        """Scores of one head before the mask and softmax: float32 ``[query, key]``.

        Raises:
            ValueError: the store keeps weights only.
        """
        ...


def rule_mask(n_query: int, n_key: int, causal: bool, window: int | None = None) -> np.ndarray:
    """The mask a plain Transformer uses: all True, lower-triangular when ``causal``, and keys
    more than ``window - 1`` positions behind the query forbidden when ``window`` is set.

    Returns:
        bool ``[query, key]``.
    """
    allowed = np.ones((n_query, n_key), dtype=bool)
    if causal:
        allowed = np.tril(allowed)
        if window:
            allowed &= ~np.tril(allowed, k=-int(window))
    return allowed


class DenseStore:
    """Every weight in memory (and, when recorded, every score).

    Args:
        weights: ``[layer, head, query, key]``.
        scores: optional scores before masking, same shape.
        causal: the kind is causal self-attention (its mask is lower-triangular).
        window: a sliding window of causal attention (None: none).
    """

    def __init__(self, weights: np.ndarray, scores: np.ndarray | None = None, *,
                 causal: bool = False, window: int | None = None):
        self.weights = readonly(np.asarray(weights).astype(np.float32, copy=False))
        if self.weights.ndim != 4:
            raise ValueError(f"weights must be [layer, head, query, key], got shape "
                             f"{self.weights.shape}")
        if scores is not None:
            scores = readonly(np.asarray(scores).astype(np.float32, copy=False))
            if scores.shape != self.weights.shape:
                raise ValueError(f"scores of shape {scores.shape} do not match the weights "
                                 f"{self.weights.shape}")
        self._scores = scores
        n_query, n_key = self.weights.shape[2:]
        self._mask = readonly(rule_mask(n_query, n_key, causal, window))

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(self.weights.shape)

    def __getitem__(self, index: tuple[int, int]) -> np.ndarray:
        layer, head = index
        return self.weights[self._layer(layer), self._head(head)]

    def layer(self, layer: int) -> np.ndarray:
        return self.weights[self._layer(layer)]

    def stack(self) -> np.ndarray:
        return self.weights

    def blocks(self, layer: int, heads=None, rows: range | None = None,
               budget: int = BLOCK_BYTES, align: tuple[int, int] = (1, 1)) -> Iterator[Block]:
        weights = self.weights[self._layer(layer)]
        if heads is not None:
            weights = weights[[self._head(h) for h in heads]]
        rows = range(weights.shape[1]) if rows is None else rows
        for start, stop in row_slices(rows, rows_per_block(len(weights), weights.shape[2],
                                                           budget, align[0])):
            yield Block(start, weights[:, start:stop])

    def mask(self, layer: int) -> np.ndarray:
        self._layer(layer)
        return self._mask

    def scores(self, layer: int, head: int) -> np.ndarray:
        layer, head = self._layer(layer), self._head(head)
        if self._scores is None:
            raise ValueError(_(NO_SCORES))
        return self._scores[layer, head]

    def _layer(self, layer: int) -> int:
        n = self.weights.shape[0]
        return check_index(layer, n, _("layer"),
                           _("the store has {count} layers").format(count=n))

    def _head(self, head: int) -> int:
        n = self.weights.shape[1]
        return check_index(head, n, _("head"), _("the store has {count} heads").format(count=n))
