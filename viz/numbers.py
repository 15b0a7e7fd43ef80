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
- :func:`rough_size`: memory as the server's messages give it (``1.5 GB``, ``51 MB``);
- :func:`short_count`: a large number in the reader's units, in English by thousands (``12k``,
  ``1.5M``, ``10B``), in 中文 by ten-thousands (``1.2 万``, ``1 亿``, ``1 万亿``);
- :func:`decade_ticks` and :func:`linear_ticks`: an axis's tick labels written with
  :func:`short_count` (Plotly's own, ``10k``, ``1B``, are English whatever the page's language).
"""

from __future__ import annotations

import math

import numpy as np

import i18n

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


# How each language groups a large number's digits: English by thousands, Chinese by
# ten-thousands (万, 亿 = 万万, 万亿). Not translations of each other (1 亿 is 100M), so they
# are kept here rather than in the catalog; past the largest, numbers go in powers of ten.
SIZE_UNITS = {"en": ((1e3, "k"), (1e6, "M"), (1e9, "B"), (1e12, "T")),
              "zh": ((1e4, "万"), (1e8, "亿"), (1e12, "万亿"))}
UNIT_SPACE = {"en": "", "zh": " "}  # 12k; 1.2 万 (a space beside a number, as in 第 3 层)


def _digits(value: float, digits: int) -> str:
    """``value`` (≥ 0) to ``digits`` significant digits, never dropping whole ones (``1235``,
    ``1.2``), trailing zeros left out; below 1 with :func:`significant`."""
    if value < 1:
        return significant(value, digits)
    decimals = max(0, digits - len(str(int(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def short_count(value: float, digits: int = 2) -> str:
    """A large number in the units of the current language, to ``digits`` significant digits
    (never fewer than its whole part): English ``12k``, ``1.5M``, ``10B``, ``1T``; 中文
    ``1.2 万``, ``1 亿``, ``1 万亿``. Past the largest unit (10¹⁵, 10¹⁶) in powers of ten
    (``1.2 × 10¹⁶``, ``10¹⁸``); below the smallest as it is (``512``, ``9999`` in 中文)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value < 0:
        return "-" + short_count(-value, digits)
    language = i18n.language() if i18n.language() in SIZE_UNITS else "en"
    units, space = SIZE_UNITS[language], UNIT_SPACE[language]
    ratio = units[1][0] / units[0][0]  # 1,000 or 10,000 from one unit to the next
    if value >= units[-1][0] * ratio:
        exponent = math.floor(math.log10(value))
        mantissa = _digits(value / 10 ** exponent, digits)
        if float(mantissa) >= 10:  # 9.99… rounded up to 10
            exponent, mantissa = exponent + 1, _digits(value / 10 ** (exponent + 1), digits)
        power = f"10{superscript(exponent)}"
        return power if mantissa == "1" else f"{mantissa} × {power}"
    scale, unit = 1.0, ""
    for size, name in units:
        if value >= size:
            scale, unit = size, name
    text = _digits(value / scale, digits)
    bigger = [(size, name) for size, name in units if size > scale]
    if bigger and float(text) * scale >= bigger[0][0]:  # rounded up: 9,999.7 is 1 万
        return short_count(float(text) * scale, digits)
    return f"{text}{space}{unit}" if unit else text


def decade_ticks(low: float, high: float, most: int = 12) -> dict:
    """Settings for a log axis from ``low`` to ``high`` (both > 0): a label at every power of
    ten, written with :func:`short_count` (``1``, ``10``, ``100``, ``1000``, ``1 万``, …), or
    at every k-th when more than ``most`` would be labelled."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    step = max(1, math.ceil((last - first + 1) / most))
    values = [10.0 ** e for e in range(first, last + 1, step)]
    return {"tickmode": "array", "tickvals": values,
            "ticktext": [short_count(v) for v in values]}


def linear_ticks(high: float, count: int = 6) -> dict:
    """Settings for a linear axis from 0 to ``high``: about ``count`` labels at round values
    (steps of 1, 2, 2.5 or 5 × 10ᵏ), written with :func:`short_count`."""
    high = float(high)
    if not high > 0 or not math.isfinite(high):
        return {}
    rough = high / count
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= rough)
    values = [i * step for i in range(int(math.ceil(high / step - 1e-9)) + 1)]
    return {"tickmode": "array", "tickvals": values,
            "ticktext": [short_count(v, digits=3) for v in values]}
