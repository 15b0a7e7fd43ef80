"""How the lessons write vectors (:func:`vector`) and small matrices in LaTeX
(:func:`matrix_tex`), each number as :func:`viz.numbers.number` writes it."""

from __future__ import annotations

import numpy as np

from viz.numbers import number


def vector(values, decimals: int | None = None) -> str:
    """``[1, 0]``: a vector in brackets."""
    return "[" + ", ".join(number(v, decimals) for v in np.ravel(values)) + "]"


def matrix_tex(matrix, decimals: int | None = None) -> str:
    """A matrix (or a vector, as one row) in LaTeX's ``bmatrix``."""
    matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
    rows = [" & ".join(number(v, decimals) for v in row) for row in matrix]
    return r"\begin{bmatrix}" + r" \\ ".join(rows) + r"\end{bmatrix}"
