"""Two attention patterns compared: the difference of two heads whose tokens line up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _
from viz.heatmap import HOVER_CELLS, _check_pooled, _pooled
from viz.labels import axis_ticks, escape, labels_that_fit
from viz.sizes import HEAD_SIDE, SCREEN_PLOT_PX
from viz.style import DIVERGING_SCALE, themed

GAP_SIDE = 64  # past this many rows or columns, cells are drawn without gaps between them


def paired_labels(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """One label per position of two token lists of equal length: the token, or ``a → b``
    where they differ."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} and {len(second)} tokens do not line up")
    return [a if a == b else f"{a} → {b}" for a, b in zip(first, second)]


DIFFERENCE_HOVER = N_("%{customdata}<br>difference %{z:+.3f}<extra></extra>")
POSITION_DIFFERENCE_HOVER = N_("query row %{y}<br>key column %{x}<br>difference %{z:+.3f}"
                               "<extra></extra>")
BLOCK_DIFFERENCE_HOVER = N_("query block %{y}<br>key block %{x}<br>difference %{z:+.3f}"
                            "<extra></extra>")


def difference_heatmap(difference, query_labels: Sequence[str], key_labels: Sequence[str], *,
                       title: str = "", subtitle: str = "", max_side: int = HEAD_SIDE,
                       factors: tuple[int, int] | None = None) -> go.Figure:
    """``second − first`` of two heads' weights, ``[query, key]``: red where the second
    sentence (or model) attends more, blue where less, white where nothing changed; the
    colour scale is symmetric about 0 and at least ±0.1 wide, so noise stays pale.

    Long inputs are drawn in blocks of tokens as :func:`viz.attention_heatmap` draws them
    (pooling is linear, so the difference of two pooled heads is the pooled difference), and
    a large figure names its cells by row and column and sends float32: the figure stays as
    small as the head's.

    Args:
        difference: ``[query, key]`` differences of weights (each in -1..1), or already
            pooled by ``factors`` (tokens per query block, per key block).
        query_labels, key_labels: the rows' and columns' labels, one per token (see
            :func:`paired_labels`).
        max_side: longest axis drawn cell by cell when ``factors`` is not given.
    """
    difference = _check_pooled(np.asarray(difference, dtype=float), query_labels, key_labels,
                               factors)
    difference, _allowed, rows, cols, note = _pooled(difference, None, list(query_labels),
                                                     list(key_labels), max_side, factors)
    subtitle = "<br>".join(part for part in (note, subtitle) if part)
    top = max(0.1, float(np.nanmax(np.abs(difference))) if difference.size else 0.1)
    if len(rows) * len(cols) > HOVER_CELLS:  # named by row and column, not by their tokens
        customdata, hover = None, BLOCK_DIFFERENCE_HOVER if note else POSITION_DIFFERENCE_HOVER
        difference = difference.astype(np.float32)
    else:
        customdata = np.array([[f"{q} → {k}" for k in escape(cols)] for q in escape(rows)],
                              dtype=object)
        hover = DIFFERENCE_HOVER
    fig = go.Figure(go.Heatmap(
        z=difference, x=list(range(len(cols))), y=list(range(len(rows))), customdata=customdata,
        colorscale=DIVERGING_SCALE, reversescale=True, zmid=0, zmin=-top, zmax=top,
        colorbar={"title": {"text": _("difference")}}, hovertemplate=_(hover),
        xgap=1 if len(cols) <= GAP_SIDE else 0, ygap=1 if len(rows) <= GAP_SIDE else 0))
    heading = f"{title}<br><sup>{subtitle}</sup>" if subtitle else title
    cell = max(3, min(26, 640 // max(1, len(rows))))
    fig.update_layout(title={"text": heading}, height=max(360, 160 + cell * len(rows)),
                      margin={"t": 100 + 20 * subtitle.count("<br>")})
    fig.update_xaxes(title_text=_("key (attended to)"), side="bottom", tickangle=-45,
                     **axis_ticks(cols, labels_that_fit(SCREEN_PLOT_PX)))
    fig.update_yaxes(title_text=_("query (attending)"), autorange="reversed",
                     **axis_ticks(rows, labels_that_fit(cell * len(rows))))
    return themed(fig)


def heads_difference(first, second, queries: tuple[Sequence[str], Sequence[str]],
                     keys: tuple[Sequence[str], Sequence[str]], **kwargs) -> go.Figure:
    """:func:`difference_heatmap` of two heads drawn alike (``second − first``), their rows
    and columns named by :func:`paired_labels`.

    Args:
        first, second: ``[query, key]`` weights of the two heads, or both pooled by the same
            ``factors``.
        queries, keys: the first's and the second's query tokens, and key tokens.
        kwargs: as :func:`difference_heatmap` (``factors``, ``title``, ``subtitle``, ...).
    """
    difference = np.asarray(second, dtype=np.float64) - first
    return difference_heatmap(difference, paired_labels(*(list(t) for t in queries)),
                              paired_labels(*(list(t) for t in keys)), **kwargs)
