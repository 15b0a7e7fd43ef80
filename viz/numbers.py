"""How the app writes numbers in text (captions, metrics, LaTeX, hovers): one home for every
number formatter of the pages and the lessons.

- :func:`number`: as a lesson writes it, ``0.7``, ``-3``, or a fixed number of places;
- :func:`significant`: a few significant digits, no exponent (``0.000033``);
- :func:`byte_size`: bytes in B, KB, MB or GB (1,024 each);
- :func:`thousands`: a whole number with separators (``12,288``);
- :func:`count`: a count, in powers of ten from a million on (``1.34 × 10⁹``);
- :func:`tiny`: a number near 0 in powers of ten (``6.0 × 10⁻⁸``, no letter e, which reads as
  English in 中文);
- :func:`exponential`: eˣ as a lesson writes it (``2981``, ``0.05``, ``1.00e+07``);
- :func:`rough_size`: memory as the server's messages give it (``1.5 GB``, ``51 MB``).
"""

from __future__ import annotations

import numpy as np

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
BYTE_UNITS = ("B", "KB", "MB", "GB")


def superscript(exponent: int) -> str:
    """An exponent in superscript digits: ``-8`` → ``⁻⁸``."""
    return str(int(exponent)).translate(SUPERSCRIPT)


def number(value: float, decimals: int | None = None) -> str:
    """A number as the lesson writes it: ``decimals`` places, or as short as it is exact
    (``0.7``, ``-3``) when None; −0 written as 0."""
    value = float(value) + 0.0  # -0.0 + 0.0 is 0.0
    if decimals is None:
        return f"{value:g}"
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def significant(value: float, digits: int = 2) -> str:
    """``value`` with ``digits`` significant digits and no exponent: 0.000033, 0.32, 2981."""
    return np.format_float_positional(float(value), precision=digits, unique=True,
                                      fractional=False, trim="-")


def byte_size(n_bytes: float, largest: str = "GB") -> str:
    """Bytes in B (``1,000 B``), else KB, MB or GB with one decimal (1,024 of the unit
    before), at most in ``largest`` (``"MB"``: ``2,048.0 MB`` rather than ``2.0 GB``)."""
    units = BYTE_UNITS[:BYTE_UNITS.index(largest) + 1]
    for unit in units:
        if n_bytes < 1024 or unit == units[-1]:
            return f"{n_bytes:,.0f} B" if unit == "B" else f"{n_bytes:,.1f} {unit}"
        n_bytes /= 1024
    return ""


def count(value: int) -> str:
    """A count: ``12,345``, or in powers of ten from a million on (``1.34 × 10⁹``)."""
    if value < 10 ** 6:
        return f"{value:,}"
    exponent = len(str(value)) - 1
    return f"{value / 10 ** exponent:.2f} × 10{superscript(exponent)}"


def thousands(value) -> str:
    """A whole number with thousands separators (``12,288``); anything else as it is."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def tiny(value: float) -> str:
    """A number near 0 as ``6.0 × 10⁻⁸`` (no letter e, which reads as English in 中文)."""
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa} × 10{superscript(int(exponent))}"


def exponential(x: float) -> str:
    """eˣ written as the lesson writes it: 2981, 0.05; very large or small ones in powers
    of ten (``1.00e+07``)."""
    if x == 0 or x >= 1e6 or x < 0.01:
        return f"{x:.2e}"
    return f"{x:.0f}" if x >= 100 else f"{x:.2f}"


def rough_size(n_bytes: float) -> str:
    """``n_bytes`` for people: ``"1.5 GB"``, ``"51 MB"``."""
    if n_bytes >= 1024 ** 3:
        return f"{n_bytes / 1024 ** 3:.1f} GB"
    return f"{max(1, round(n_bytes / 1024 ** 2))} MB"
