"""Colours and fonts of every figure, in one place.

Weights (0..1) are blue, signed values (scores, encodings, q·k) red-blue diverging, statistics and
similarities Viridis; masked cells grey, −∞ near-black; each head keeps one colour in every
head-coloured view.
"""

from __future__ import annotations

WEIGHT_SCALE = "Blues"
DIVERGING_SCALE = "RdBu"
SEQUENTIAL_SCALE = "Viridis"

MASK_COLOR = "#9e9e9e"
ALLOWED_COLOR = "#cfe8cf"
NEG_INF_COLOR = "#2b2b2b"
NEG_INF_TEXT_COLOR = "white"
SPECIAL_TOKEN_COLOR = "#8a8a8a"

BAR_COLOR = "#4a7fb5"
HIGHLIGHT_COLOR = "#d9822b"
TOKEN_MARKER_COLOR = "#444"
GUIDE_COLOR = "#ddd"

HEAD_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
               "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939")
ATTENTION_CURVE_COLOR = HEAD_COLORS[0]
RNN_CURVE_COLOR = HEAD_COLORS[1]
CURRENT_COLOR = HEAD_COLORS[2]

INVISIBLE = "rgba(0,0,0,0)"
TOKEN_MARKER_SIZE = 7
POINT_MARKER_SIZE = 6

PLOT_BACKGROUND = "white"
GRID_COLOR = "#eee"
SMALL_TICK_FONT = {"size": 9}
CELL_FONT_SIZE = 10
MARK_FONT_SIZE = 11


def head_color(head: int) -> str:
    """The colour of a head in every head-coloured view."""
    return HEAD_COLORS[head % len(HEAD_COLORS)]


def rgba(color: str, alpha: float) -> str:
    """``#rrggbb`` with an opacity, as Plotly's ``rgba(r,g,b,a)``."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:.3f})"
