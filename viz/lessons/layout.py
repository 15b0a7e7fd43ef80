"""Pieces shared by several lessons' figures: the width of a chart in a narrow column and the
tick angle that fits it, the hover's query/key lines, the fills and border of the
architecture's blocks (the multi-head lesson draws its stages in the same colours), and the
symmetric colour range of a diverging heatmap, and the diagrams' arrows."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import labels_that_fit
from viz.style import GUIDE_COLOR

EXTRA = "<extra></extra>"
# The plot width of a chart in a column on a 1024 px screen with the sidebar open: token axes
# longer than fits there are labelled every k-th token (the hover names every one).
NARROW_PX = 150
# Fills of the blocks (the colours of the original paper's figure), light enough for dark text
# on both themes.
FILLS = {"embed": "#f7cfd8", "attention": "#fbd9a9", "norm": "#f1f0b0", "ffn": "#c4e1f5",
         "output": "#d6cdf0"}
BORDER = "#555555"


def slant(labels: Sequence[str]) -> int:
    """Tick labels slanted while the ones shown fit side by side on a narrow chart
    (:data:`NARROW_PX`), upright beyond: slanted boxes of long or many labels overlap."""
    every = math.ceil(len(labels) / labels_that_fit(NARROW_PX))
    # px a label takes at -45°: 7 a Latin character, 12 a CJK one, at the default 12 px font
    extent = sum((sum(12 if ord(c) > 0x2E80 else 7 for c in str(t)) + 16) * 0.71
                 for t in list(labels)[::every])
    return -45 if extent <= NARROW_PX * 1.3 else -90


def query_key_hover() -> str:
    """The hover's first two lines: the cell's query and key (``customdata[0]``, ``[1]``)."""
    return _("query %{customdata[0]}<br>key %{customdata[1]}<br>")


def symmetric(values) -> float:
    """The largest finite ``|value|`` (1 when there is none): a diverging scale's range."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0


def arrow(fig: go.Figure, x0: float, y0: float, x1: float, y1: float) -> None:
    """An arrow from ``(x0, y0)`` to ``(x1, y1)`` in data units."""
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                       text="", showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6,
                       arrowcolor=GUIDE_COLOR)
