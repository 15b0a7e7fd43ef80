"""Colours and fonts of every figure, in one place.

Weights (0..1) are blue, signed values (scores, encodings, q·k) red-blue diverging, statistics and
similarities Viridis; masked cells grey, −∞ dark grey; each head keeps one colour in every
head-coloured view.

Figures follow Streamlit's light or dark theme: backgrounds are transparent and text takes the
theme's colour (no figure sets one for text on the background). The colours set here for marks
drawn on the background are mid-tones that read on white and on Streamlit's dark background
(``tests/unit/test_theme.py`` checks their contrast on both). Exported figures have nothing to
show through: they are drawn on the theme's own background and text colours
(:data:`THEME_COLORS`), opaque, for a light or a dark slide.
"""

from __future__ import annotations

import plotly.graph_objects as go

from i18n import N_, _

WEIGHT_SCALE = "Blues"
DIVERGING_SCALE = "RdBu"
SEQUENTIAL_SCALE = "Viridis"

MASK_COLOR = "#9e9e9e"
ALLOWED_COLOR = "#cfe8cf"
NEG_INF_COLOR = "#3a3a3a"
NEG_INF_TEXT_COLOR = "white"
CELL_TEXT_COLOR = "#1a1a1a"  # text written on light cells (the mask panel's ✓ and ✗)
SPECIAL_TOKEN_COLOR = "#8a8a8a"

BAR_COLOR = "#4a7fb5"
HIGHLIGHT_COLOR = "#d9822b"
TOKEN_MARKER_COLOR = "#888888"
GUIDE_COLOR = "rgba(136,136,136,0.8)"

# Eight head colours, each matching a coloured emoji that names the head in widgets (🔵 head 0);
# heads 8-15 reuse them with dashed lines and square emoji (🟦 head 8), 16-23 dotted, and so on.
HEAD_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#b5a800", "#8c564b",
               "#7f7f7f")
HEAD_DASHES = ("solid", "dash", "dot", "dashdot")
# How a line style is named to people (the style itself, "dot", is Plotly's value).
DASH_NAMES = {"solid": N_("solid"), "dash": N_("dash"), "dot": N_("dot"),
              "dashdot": N_("dashdot")}
HEAD_MARKS = ("🔵🔴🟢🟣🟠🟡🟤⚫", "🟦🟥🟩🟪🟧🟨🟫⬛")
ATTENTION_CURVE_COLOR = HEAD_COLORS[0]
RNN_CURVE_COLOR = HEAD_COLORS[1]
CURRENT_COLOR = HEAD_COLORS[2]

TOKEN_MARKER_SIZE = 7
POINT_MARKER_SIZE = 6

TRANSPARENT = "rgba(0,0,0,0)"
GRID_COLOR = "rgba(128,128,128,0.25)"
SMALL_TICK_FONT = {"size": 11}  # tick labels of small panels (the mask's, a grid of heads)
CELL_FONT_SIZE = 10  # text in cells on a screen (a projector's is viz.present's, 18 px or more)
MARK_FONT_SIZE = 11

# Streamlit's two themes as an exported figure is drawn on them: the page's background, its
# text, and grid lines that stay faint on it.
THEME_COLORS = {
    "light": {"background": "#ffffff", "text": "#31333f", "grid": "#e6e9ef"},
    "dark": {"background": "#0e1117", "text": "#fafafa", "grid": "#31333f"},
}


def themed(fig: go.Figure) -> go.Figure:
    """Let the page's theme show through: transparent paper and plot backgrounds."""
    fig.update_layout(paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT)
    return fig


def head_color(head: int) -> str:
    """The colour of a head in every head-coloured view."""
    return HEAD_COLORS[head % len(HEAD_COLORS)]


def head_dash(head: int) -> str:
    """The line style of a head: solid for heads 0-7, dashed for 8-15, dotted for 16-23, ..."""
    return HEAD_DASHES[head // len(HEAD_COLORS) % len(HEAD_DASHES)]


def head_label(head: int) -> str:
    """A head's name with the emoji of its colour (circles for 0-7, squares for 8-15), so that
    widget chips match the lines: ``"🔵 head 0"``. From head 16 on, its line style in words
    (``"head 16 (dot)"``); colour and style repeat every 32 heads. The emoji are the nearest
    there are: 🟡 stands for an olive yellow (bright yellow would fade on white) and ⚫ for
    grey."""
    round_ = head // len(HEAD_COLORS)
    if round_ < len(HEAD_MARKS):
        return f"{HEAD_MARKS[round_][head % len(HEAD_COLORS)]} {head_name(head)}"
    style = _(DASH_NAMES[HEAD_DASHES[round_ % len(HEAD_DASHES)]])
    return _("head {head} ({style})").format(head=head, style=style)


def head_name(head: int) -> str:
    """A head's name in the current language: ``"head 3"``."""
    return _("head {head}").format(head=head)


def rgba(color: str, alpha: float) -> str:
    """``#rrggbb`` with an opacity, as Plotly's ``rgba(r,g,b,a)``."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:.3f})"
