"""Two attention patterns compared: the difference of two heads whose tokens line up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _
from viz.heatmap import HOVER_CELLS, _check_allowed, _check_pooled, _pooled
from viz.labels import axis_ticks, escape, fit_ticks
from viz.sizes import HEAD_SIDE, SCREEN_CHART_PX
from viz.style import DIVERGING_SCALE, MASK_COLOR, themed

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
                       factors: tuple[int, int] | None = None, allowed=None) -> go.Figure:
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
        allowed: optional bool ``[query, key]`` (per token): where the heads may attend.
            Cells the mask forbids are drawn grey, as the heads draw them, not white: they
            did not stay the same, they cannot be attended to (a causal model's later keys).
    """
    difference = _check_pooled(np.asarray(difference, dtype=float), query_labels, key_labels,
                               factors)
    allowed = _check_allowed(allowed, (len(query_labels), len(key_labels)))
    difference, allowed, rows, cols, note = _pooled(difference, allowed, list(query_labels),
                                                    list(key_labels), max_side, factors)
    masked = None if allowed is None or allowed.all() else ~allowed
    if masked is not None:
        difference = np.where(masked, np.nan, difference)
    subtitle = "<br>".join(part for part in (note, subtitle) if part)
    top = max(0.1, float(np.nanmax(np.abs(difference))) if difference.size else 0.1)
    y_title = _("query (attending)")
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
    if masked is not None:
        fig.add_trace(go.Heatmap(
            z=np.where(masked, 1.0, np.nan).astype(difference.dtype), x=list(range(len(cols))),
            y=list(range(len(rows))), colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
            showscale=False, hoverinfo="skip", name="masked", xgap=1 if len(cols) <= GAP_SIDE
            else 0, ygap=1 if len(rows) <= GAP_SIDE else 0))
    heading = f"{title}<br><sup>{subtitle}</sup>" if subtitle else title
    # drawn as viz.attention_heatmap draws a head (its cells, height, margins and labels), so
    # that beside the two heads its rows line up with theirs
    cell = max(6, min(48, 640 // max(1, len(rows), len(cols))))
    fig.update_layout(
        title={"text": heading},
        height=max(320, 140 + cell * len(rows), 150 + 7 * len(y_title)),
        margin={"l": 60, "r": 30, "t": 40 + 20 * (1 + heading.count("<br>")) if heading else 30,
                "b": 50})
    fig.update_xaxes(title_text=_("key (attended to)"), side="bottom",
                     **axis_ticks(cols, len(cols)))
    fig.update_yaxes(title_text=y_title, autorange="reversed", **axis_ticks(rows, len(rows)))
    fit_ticks(fig, SCREEN_CHART_PX)
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
