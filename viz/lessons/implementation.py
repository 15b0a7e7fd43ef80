"""How the lesson §4.9 writes the tensors a line of its listing made: a shape as the lesson
writes it, ``(1, 4, 6, 32)``, a few numbers, ``[0.71, 0.00, −∞, …]`` (−∞ for a masked
score), or a small tensor whole. The page's one figure is
:func:`viz.heatmap.attention_heatmap` of the weights the listing returns."""

from __future__ import annotations

import math

import numpy as np

from viz.numbers import number


def shape_text(shape) -> str:
    """``(1, 4, 6, 32)``: a tensor's shape in parentheses (a 1-d one with its comma)."""
    sizes = [str(int(n)) for n in shape]
    return "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"


def values_text(values, decimals: int = 2, more: bool = False) -> str:
    """A few numbers in brackets, −∞ written as such; ``more``: an ellipsis after them.

    Args:
        values: ``[n]`` numbers (any shape, read flat).
        decimals: the places of each number.
        more: the tensor holds more numbers than these.
    """
    def one(value) -> str:
        if isinstance(value, bool | np.bool_):
            return str(bool(value))
        value = float(value)
        if math.isinf(value):
            return "−∞" if value < 0 else "∞"
        return number(value, decimals)

    texts = [one(v) for v in np.ravel(values)]
    return "[" + ", ".join(texts + (["…"] if more else [])) + "]"


def matrix_text(values, decimals: int = 2) -> str:
    """A small tensor whole, its axes of length 1 dropped: ``[[1, 0], [0, 1]]`` (at most two
    axes left; a vector as :func:`values_text` writes it).

    Args:
        values: ``[..., n]`` or ``[..., m, n]`` numbers, other axes of length 1.
    """
    array = np.asarray(values)
    squeezed = array.reshape([n for n in array.shape if n > 1] or [array.size])
    if squeezed.ndim == 1:
        return values_text(squeezed, decimals)
    return "[" + ", ".join(values_text(row, decimals) for row in squeezed) + "]"
