"""Figures of the lesson §3.6, RNN against Transformer (numbers from :mod:`model.lessons.rnn`):
forgetting by length, the gradient along the information path, and serial steps timed."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from i18n import _
from viz.lessons.layout import EXTRA
from viz.style import (
    ATTENTION_CURVE_COLOR,
    HEAD_COLORS,
    HIGHLIGHT_COLOR,
    RNN_CURVE_COLOR,
    themed,
)

# A line per model, each its own colour, dash and marker (told apart in grey print too): the
# GRU's single vector in the RNN colour, the plain RNN in purple, Bahdanau's attention in
# orange, the Transformer in the attention colour (as in lesson 4.8's curves).
MODEL_COLORS = {"own-rnn": HEAD_COLORS[3], "own-gru": RNN_CURVE_COLOR,
                "own-bahdanau": HIGHLIGHT_COLOR, "own-translator": ATTENTION_CURVE_COLOR}
MODEL_DASHES = {"own-rnn": "dashdot", "own-gru": "solid", "own-bahdanau": "dash",
                "own-translator": "dot"}
MODEL_SYMBOLS = {"own-rnn": "diamond", "own-gru": "circle", "own-bahdanau": "square",
                 "own-translator": "triangle-up"}


def _line(name: str, label: str, x, y, hover: str) -> go.Scatter:
    return go.Scatter(x=list(x), y=list(y), mode="lines+markers", name=label, meta=name,
                      line={"color": MODEL_COLORS.get(name, RNN_CURVE_COLOR), "width": 3,
                            "dash": MODEL_DASHES.get(name, "solid")},
                      marker={"size": 10, "symbol": MODEL_SYMBOLS.get(name, "circle")},
                      hovertemplate=label + "<br>" + hover + EXTRA)


def forgetting_figure(bins: Sequence[tuple[int, int]], sentences: Sequence[int],
                      exact_match: dict[str, Sequence[float | None]],
                      labels: dict[str, str]) -> go.Figure:
    """Held-out exact match (%) against sentence length, one line per model.

    Args:
        bins: ``(first, last)`` English words of each group.
        sentences: sentences per group (shown in the tick labels).
        exact_match: ``{model: [fraction or None per group]}``.
        labels: ``{model: its name on the page}``.

    Returns:
        a figure with one trace per model (``meta`` its name), y in percent.
    """
    ticks = [_("{first}–{last} words<br>({count} sentences)").format(
        first=a, last=b, count=n) for (a, b), n in zip(bins, sentences)]
    fig = go.Figure()
    for name, values in exact_match.items():
        keep = [(i, 100 * v) for i, v in enumerate(values) if v is not None]
        fig.add_trace(_line(name, labels.get(name, name), [i for i, _v in keep],
                            [v for _i, v in keep], _("exact match %{y:.1f}%")))
    fig.update_layout(title=_("Held-out sentences translated exactly, by length"),
                      height=460, legend={"orientation": "h", "y": -0.3},
                      margin={"l": 70, "r": 30, "t": 60, "b": 140})
    fig.update_xaxes(tickvals=list(range(len(ticks))), ticktext=ticks,
                     title_text=_("English words in the sentence"))
    fig.update_yaxes(title_text=_("exact match (%)"), range=[0, 105])
    return themed(fig)


def gradient_figure(distance: Sequence[int], relative: dict[str, Sequence[float]],
                    labels: dict[str, str], words: Sequence[str] | None = None,
                    title: str | None = None) -> go.Figure:
    """The gradient's norm at each word relative to its median, against the distance to the
    last word, on a logarithmic axis: one line per model.

    Args:
        distance: ``[position]`` words to the last word.
        relative: ``{model: [position] norm ÷ the model's median norm}``.
        labels: ``{model: its name on the page}``.
        words: ``[position]`` the words (one sentence): each distance's tick names its word.
        title: the figure's title (default: the sentence's).
    """
    order = sorted(range(len(distance)), key=lambda i: distance[i])  # nearest first
    distance = [int(distance[i]) for i in order]
    words = None if words is None else [words[i] for i in order]
    fig = go.Figure()
    for name, values in relative.items():
        fig.add_trace(_line(name, labels.get(name, name), distance,
                            [float(values[i]) for i in order],
                            _("distance %{x}<br>%{y:.3~r} × the median")))
    fig.update_layout(title=title or _("How much the last position still feels each word"),
                      height=460, legend={"orientation": "h", "y": -0.3},
                      margin={"l": 80, "r": 30, "t": 60, "b": 130})
    ticks = {"dtick": 1} if words is None else {
        "tickvals": list(distance), "ticktext": [f"{d}<br>{w}" for d, w in zip(distance, words)]}
    fig.update_xaxes(title_text=_("words between the word and the last one"), **ticks)
    fig.update_yaxes(title_text=_("‖gradient‖ ÷ its median"), type="log", dtick=1,
                     exponentformat="power")
    return themed(fig)


def timing_figure(lengths: Sequence[int], seconds: dict[str, Sequence[float]],
                  labels: dict[str, str], device: str) -> go.Figure:
    """Milliseconds of one encoder pass against the length, both axes logarithmic.

    Args:
        lengths: the lengths timed.
        seconds: ``{model: [length] median seconds}``.
        labels: ``{model: its name on the page}``.
        device: where it ran (in the title).
    """
    fig = go.Figure()
    for name, values in seconds.items():
        fig.add_trace(_line(name, labels.get(name, name), lengths,
                            [1000 * s for s in values], _("%{x:,} tokens<br>%{y:,.3~r} ms")))
    fig.update_layout(title=_("One encoder pass, timed on {device}").format(device=device),
                      height=460, legend={"orientation": "h", "y": -0.25},
                      margin={"l": 80, "r": 30, "t": 60, "b": 110})
    # log axes labelled at the lengths and at each power of ten only: Plotly's minor digits
    # (2, 3, … 9) overlap on a short axis
    fig.update_xaxes(title_text=_("tokens read"), type="log", tickvals=list(lengths))
    fig.update_yaxes(title_text=_("milliseconds (median)"), type="log", dtick=1)
    return themed(fig)
