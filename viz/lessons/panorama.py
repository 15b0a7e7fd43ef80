"""Figures of the lesson §5.1–5.2, the panorama (numbers from :mod:`model.lessons.panorama`):
the information path's length against the sentence's."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from i18n import _
from viz.lessons.layout import EXTRA
from viz.style import ATTENTION_CURVE_COLOR, HIGHLIGHT_COLOR, RNN_CURVE_COLOR, themed


def path_figure(lengths: Sequence[int], recurrent: Sequence[int],
                attention_rnn: Sequence[int], transformer: Sequence[int]) -> go.Figure:
    """Steps a word's signal crosses against the sentence length, one line per architecture.

    Args:
        lengths: the sentence lengths.
        recurrent: an RNN: steps from the first word to the last state (n).
        attention_rnn: an RNN with attention: into the first state, then read by the decoder.
        transformer: a Transformer: one self-attention step.

    Returns:
        a figure of three traces, ``meta`` ``"rnn"``, ``"attention"``, ``"transformer"``.
    """
    fig = go.Figure()
    for meta, name, values, color, dash in (
            ("rnn", _("RNN / LSTM / GRU: O(n)"), recurrent, RNN_CURVE_COLOR, "solid"),
            ("attention", _("Seq2Seq + attention: 2 steps (into its state, then read)"),
             attention_rnn, HIGHLIGHT_COLOR, "dash"),
            ("transformer", _("Transformer: 1 step, O(1)"), transformer,
             ATTENTION_CURVE_COLOR, "dot")):
        fig.add_trace(go.Scatter(
            x=list(lengths), y=list(values), mode="lines+markers", name=name, meta=meta,
            line={"color": color, "width": 3, "dash": dash}, marker={"size": 9},
            hovertemplate=name + "<br>" + _("n = %{x:,}: %{y:,} steps") + EXTRA))
    fig.update_layout(title=_("Architecture evolves by shortening the information path"),
                      height=460, legend={"orientation": "h", "y": -0.3},
                      margin={"l": 80, "r": 30, "t": 60, "b": 130})
    fig.update_xaxes(title_text=_("words in the sentence n"), type="log",
                     tickvals=list(lengths))
    fig.update_yaxes(title_text=_("steps, first word → output"),
                     type="log", dtick=1)
    return themed(fig)
