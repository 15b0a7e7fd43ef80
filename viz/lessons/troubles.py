"""Figures of the lesson §3.8, the Transformer's own troubles (numbers from
:mod:`model.lessons.troubles`): attention's time and memory against n, the KV cache of MHA, GQA
and MLA models, own-translator's accuracy against the sentence length, and a mixture of
experts' parameters, all of them against those one token uses.

Pure builders (numpy and plotly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.lessons.layout import EXTRA
from viz.numbers import byte_size, linear_ticks, short_count
from viz.style import (
    ATTENTION_CURVE_COLOR,
    BAR_COLOR,
    GRID_COLOR,
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    POINT_MARKER_SIZE,
    RNN_CURVE_COLOR,
    head_color,
    themed,
)

LEGEND_BELOW = {"orientation": "h", "y": -0.3, "yanchor": "top", "x": 0}


def _lengths_axis(fig: go.Figure, lengths: np.ndarray) -> None:
    """A log x axis labelled at every length measured (256, 512, ...)."""
    fig.update_xaxes(type="log", title_text=_("sequence length n (tokens)"), tickmode="array",
                     tickvals=[float(n) for n in lengths],
                     ticktext=[f"{int(n):,}" for n in lengths], gridcolor=GRID_COLOR)


def attention_time(lengths, explicit_s, fused_s, *, title: str = "") -> go.Figure:
    """Median seconds of one layer's attention against n (both axes logarithmic): the explicit
    ``softmax(QKᵀ)V`` and the fused kernel, each step's ratio written above the explicit line,
    and a dotted n² line through the explicit attention's last point.

    Args:
        lengths: ``[n]`` tokens, ascending (doubling).
        explicit_s, fused_s: ``[n]`` median seconds.
        title: the figure's title.

    Returns:
        a figure whose traces are named "explicit", "fused" and "n²" (meta).
    """
    lengths, explicit, fused = (np.asarray(a, dtype=float) for a in (lengths, explicit_s,
                                                                      fused_s))
    if not lengths.shape == explicit.shape == fused.shape or lengths.size == 0:
        raise ValueError(f"lengths {lengths.shape}, times {explicit.shape}, {fused.shape}")
    fig = go.Figure()
    seconds = _("s")
    reference = explicit[-1] * (lengths / lengths[-1]) ** 2  # n², through the last point
    fig.add_trace(go.Scatter(
        x=lengths, y=reference, mode="lines", name=_("n² (×4 per doubling)"), meta="n²",
        line={"color": GUIDE_COLOR, "dash": "dot", "width": 2}, hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=lengths, y=explicit, mode="lines+markers", meta="explicit",
        name=_("explicit softmax(QKᵀ/√d)V (holds n × n scores)"),
        line={"color": ATTENTION_CURVE_COLOR, "width": 3},
        marker={"size": POINT_MARKER_SIZE + 4},
        hovertemplate="n = %{x:,}<br>%{y:.4f} " + seconds + EXTRA))
    fig.add_trace(go.Scatter(
        x=lengths, y=fused, mode="lines+markers", meta="fused",
        name=_("fused kernel (no n × n matrix kept)"),
        line={"color": RNN_CURVE_COLOR, "width": 3, "dash": "dash"},
        marker={"size": POINT_MARKER_SIZE + 4, "symbol": "square"},
        hovertemplate="n = %{x:,}<br>%{y:.4f} " + seconds + EXTRA))
    for i in range(1, len(lengths)):
        fig.add_annotation(x=np.log10(lengths[i]), y=np.log10(explicit[i]), yshift=18,
                           text=f"×{explicit[i] / explicit[i - 1]:.1f}", showarrow=False,
                           font={"color": ATTENTION_CURVE_COLOR})
    _lengths_axis(fig, lengths)
    low = float(min(explicit.min(), fused.min(), reference.min()))
    high = float(max(explicit.max(), fused.max()))
    fig.update_yaxes(type="log", title_text=_("median seconds"), gridcolor=GRID_COLOR,
                     **_seconds_ticks(low, high))
    fig.update_layout(title=title, height=460, margin={"l": 80, "r": 20, "t": 60, "b": 120},
                      legend=LEGEND_BELOW)
    return themed(fig)


def _seconds_ticks(low: float, high: float) -> dict:
    """Log-axis ticks at every power of ten between ``low`` and ``high`` seconds, written as
    numbers (0.001, 0.01, 0.1, 1)."""
    first, last = int(np.floor(np.log10(low))), int(np.ceil(np.log10(high)))
    values = [10.0 ** e for e in range(first, last + 1)]
    return {"tickmode": "array", "tickvals": values,
            "ticktext": [np.format_float_positional(v, trim="-") for v in values]}


def attention_memory(lengths, score_bytes, explicit_peak=None, fused_peak=None, *,
                     title: str = "") -> go.Figure:
    """Bytes against n (both axes logarithmic): the n × n scores the explicit attention holds
    and, on CUDA, the peak memory each method took.

    Args:
        lengths: ``[n]`` tokens, ascending.
        score_bytes: ``[n]`` bytes of the scores tensor.
        explicit_peak, fused_peak: ``[n]`` peak bytes (None: not measured, off CUDA).
        title: the figure's title.

    Returns:
        a figure whose traces are named "scores" and, where measured, "explicit peak" and
        "fused peak" (meta).
    """
    lengths = np.asarray(lengths, dtype=float)
    scores = np.asarray(score_bytes, dtype=float)
    if scores.shape != lengths.shape or lengths.size == 0:
        raise ValueError(f"lengths {lengths.shape}, bytes {scores.shape}")
    fig = go.Figure()
    series = [(scores, _("the n × n scores (n² × 4 bytes × heads)"), "scores",
               BAR_COLOR, "solid")]
    if explicit_peak is not None:
        series.append((np.asarray(explicit_peak, dtype=float), _("peak memory, explicit"),
                       "explicit peak", ATTENTION_CURVE_COLOR, "dash"))
    if fused_peak is not None:
        series.append((np.asarray(fused_peak, dtype=float), _("peak memory, fused"),
                       "fused peak", RNN_CURVE_COLOR, "dot"))
    for values, name, meta, color, dash in series:
        fig.add_trace(go.Scatter(
            x=lengths, y=np.maximum(values, 1.0), mode="lines+markers", name=name, meta=meta,
            line={"color": color, "width": 3, "dash": dash},
            marker={"size": POINT_MARKER_SIZE + 4},
            text=[byte_size(v) for v in values],
            hovertemplate="n = %{x:,}<br>%{text}" + EXTRA))
    _lengths_axis(fig, lengths)
    every = np.concatenate([np.maximum(v, 1.0) for v, *_rest in series])
    fig.update_yaxes(type="log", title_text=_("bytes"), gridcolor=GRID_COLOR,
                     **_byte_ticks(float(every.min()), float(every.max())))
    fig.update_layout(title=title, height=460, margin={"l": 80, "r": 20, "t": 60, "b": 120},
                      legend=LEGEND_BELOW)
    return themed(fig)


def _byte_ticks(low: float, high: float) -> dict:
    """Log-axis ticks at 1 KB, 1 MB, 1 GB, 1 TB and the powers of 4 between, written with
    :func:`~viz.numbers.byte_size` units."""
    values = [4.0 ** e for e in range(0, 21)]
    values = [v for v in values if low / 4 <= v <= high * 4] or [low]
    return {"tickmode": "array", "tickvals": values,
            "ticktext": [byte_size(v).replace(".0 ", " ") for v in values]}


def kv_cache(names: Sequence[str], cache_bytes, kinds: Sequence[str], *, tokens: int,
             highlight: int | None = None, title: str = "") -> go.Figure:
    """Horizontal bars of each model's KV cache for a context of ``tokens`` tokens (a log
    axis), each bar labelled with its size and its kind of attention.

    Args:
        names: the models, one bar each (top to bottom).
        cache_bytes: ``[model]`` bytes.
        kinds: ``[model]`` "MHA", "GQA", "MLA" (or a longer label).
        tokens: the context length the bytes are for (in the hover).
        highlight: the bar drawn in the highlight colour (the sidebar's model), or None.
        title: the figure's title.

    Returns:
        a figure with one bar trace.
    """
    values = np.asarray(cache_bytes, dtype=float)
    if not len(names) == len(kinds) == values.size:
        raise ValueError(f"{len(names)} names, {len(kinds)} kinds, {values.size} sizes")
    labels = [f"{name} ({kind})" for name, kind in zip(names, kinds)]
    colors = [HIGHLIGHT_COLOR if i == highlight else BAR_COLOR for i in range(len(names))]
    shown = np.maximum(values, 1.0)
    fig = go.Figure(go.Bar(
        y=list(range(len(names))), x=shown, orientation="h", marker={"color": colors},
        text=[byte_size(v) for v in values], textposition="outside", cliponaxis=False,
        customdata=labels,
        hovertemplate="%{customdata}<br>%{text}<br>"
                      + _("{tokens:,} tokens").format(tokens=tokens) + EXTRA))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), ticktext=labels,
                     autorange="reversed")
    fig.update_xaxes(type="log", title_text=_("bytes (log scale)"), gridcolor=GRID_COLOR,
                     range=[np.log10(shown.min()) - 0.3, np.log10(shown.max()) + 0.9],
                     **_byte_ticks(float(shown.min()), float(shown.max())))
    fig.update_layout(title=title, height=120 + 70 * len(names),
                      margin={"l": 20, "r": 40, "t": 60, "b": 60}, showlegend=False)
    return themed(fig)


def accuracy_by_length(bins: Sequence[tuple[int, int]], exact, accuracy, counts, *,
                       training_max: int, title: str = "") -> go.Figure:
    """Exact match and word accuracy against the source length (bins of words), the longest
    training sentence marked by a dashed line and the lengths beyond it shaded.

    Args:
        bins: ``[(first, last)]`` words of each bin.
        exact, accuracy: ``[bin]`` fractions (NaN: an empty bin, not drawn).
        counts: ``[bin]`` sentences in each bin (in the hover).
        training_max: the most words of a training sentence.
        title: the figure's title.

    Returns:
        a figure whose traces are named "exact" and "word accuracy" (meta).
    """
    exact, accuracy = (np.asarray(a, dtype=float) for a in (exact, accuracy))
    counts = np.asarray(counts, dtype=int)
    if not len(bins) == exact.size == accuracy.size == counts.size:
        raise ValueError(f"{len(bins)} bins, {exact.size}, {accuracy.size}, {counts.size}")
    centres = np.array([(a + b) / 2 for a, b in bins])
    keep = counts > 0
    names = [f"{a}–{b}" for a, b in bins]
    fig = go.Figure()
    fig.add_vrect(x0=training_max + 0.5, x1=bins[-1][1] + 1, fillcolor=GUIDE_COLOR,
                  opacity=0.12, line_width=0, layer="below")
    fig.add_vline(x=training_max + 0.5, line_color=HIGHLIGHT_COLOR, line_dash="dash",
                  line_width=3)
    fig.add_annotation(x=training_max + 0.5, y=1.08, yref="y", xanchor="left", showarrow=False,
                       text=_("longest training sentence: {n} words").format(n=training_max),
                       font={"color": HIGHLIGHT_COLOR})
    for values, name, meta, color, dash, symbol in (
            (accuracy, _("word accuracy (1 − word error rate)"), "word accuracy",
             head_color(2), "solid", "circle"),
            (exact, _("exact match (the whole sentence right)"), "exact",
             ATTENTION_CURVE_COLOR, "dash", "square")):
        fig.add_trace(go.Scatter(
            x=centres[keep], y=values[keep], mode="lines+markers", name=name, meta=meta,
            line={"color": color, "width": 3, "dash": dash},
            marker={"size": POINT_MARKER_SIZE + 5, "symbol": symbol},
            customdata=np.stack([np.array(names)[keep], counts[keep]], axis=1),
            hovertemplate=_("%{customdata[0]} words, %{customdata[1]} sentences")
            + "<br>%{y:.0%}" + EXTRA))
    ticks = [a for a, _b in bins] + [bins[-1][1]]
    fig.update_xaxes(title_text=_("English words in the sentence"), tickmode="array",
                     tickvals=ticks, ticktext=[str(t) for t in ticks],
                     range=[0, bins[-1][1] + 1], gridcolor=GRID_COLOR)
    fig.update_yaxes(title_text=_("share of sentences / of words"), range=[-0.03, 1.15],
                     tickformat=".0%", tickvals=[0, 0.25, 0.5, 0.75, 1], gridcolor=GRID_COLOR)
    fig.update_layout(title=title, height=460, margin={"l": 80, "r": 20, "t": 60, "b": 120},
                      legend=LEGEND_BELOW)
    return themed(fig)


def moe_parameters(shared: int, active_experts: int, idle_experts: int, *,
                   title: str = "") -> go.Figure:
    """Two stacked horizontal bars: every parameter of the model, and the ones one token's
    forward pass uses (the shared parts and its active experts; the idle experts only in the
    first).

    Args:
        shared: embeddings, attention, norms and routers.
        active_experts: the experts a token runs through (every layer).
        idle_experts: the experts it skips.
        title: the figure's title.

    Returns:
        a figure whose bar traces are named "shared", "active experts" and "idle experts"
        (meta).
    """
    rows = [_("all parameters"), _("used by one token")]
    fig = go.Figure()
    for values, name, meta, color in (
            ((shared, shared), _("shared: embeddings, attention, norms, routers"), "shared",
             BAR_COLOR),
            ((active_experts, active_experts), _("experts the token is routed to"),
             "active experts", HIGHLIGHT_COLOR),
            ((idle_experts, 0), _("experts it skips"), "idle experts", GUIDE_COLOR)):
        fig.add_trace(go.Bar(
            y=[0, 1], x=list(values), orientation="h", name=name, meta=meta,
            marker={"color": color}, text=[short_count(v) if v else "" for v in values],
            textposition="inside", insidetextanchor="middle",
            hovertemplate=name + "<br>%{text}" + EXTRA))
    totals = (shared + active_experts + idle_experts, shared + active_experts)
    for row, total in enumerate(totals):
        fig.add_annotation(x=total, y=row, xanchor="left", showarrow=False,
                           text=f" {short_count(total, 3)}")
    fig.update_yaxes(tickmode="array", tickvals=[0, 1], ticktext=rows, autorange="reversed")
    fig.update_xaxes(title_text=_("parameters"), gridcolor=GRID_COLOR,
                     range=[0, totals[0] * 1.18], **linear_ticks(totals[0]))
    fig.update_layout(title=title, barmode="stack", height=340,
                      margin={"l": 20, "r": 20, "t": 60, "b": 120}, legend=LEGEND_BELOW)
    return themed(fig)

