"""Figures of the lesson §3.1, a translation company: the reading team's words, their notes and
the writing team, joined by the model's real attention (numbers from
:mod:`model.lessons.company`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.labels import escape
from viz.lessons.layout import EXTRA, FILLS
from viz.style import GUIDE_COLOR, HIGHLIGHT_COLOR, SPECIAL_TOKEN_COLOR, themed

DISCUSSION_FROM = 0.1  # the discussion's lines drawn: a note's reading of a word at least this
X_WORDS, X_NOTES, X_WRITER = 0.0, 1.0, 2.0


def _ys(n: int) -> np.ndarray:
    """``n`` rows from the top down, centred on 0, one unit apart."""
    return -(np.arange(n) - (n - 1) / 2)


def company_figure(source_words: Sequence[str], written: Sequence[str], cross, discussion, *,
                   step: int, d_model: int, title: str = "", font_size: int = 14
                   ) -> go.Figure:
    """The company as a diagram, left to right: the source words (the reading team reads them
    all at once), one note per word (the encoder's output), and the words the writing team
    wrote. Grey lines from the words to the notes are the discussion (the last encoder layer's
    self-attention, head-averaged, where a note reads a word with weight ≥
    :data:`DISCUSSION_FROM`); coloured lines from every note to the word written at ``step``
    are its cross-attention, as wide as their weight.

    Args:
        source_words: ``S`` source words.
        written: ``T`` words written, one per decoder step.
        cross: ``[T, S]`` cross-attention (mean over heads); the row ``step`` is drawn.
        discussion: ``[S, S]`` encoder self-attention (mean over heads), row = note.
        step: the step whose look at the notes is drawn.
        d_model: the width of a note (named in the notes' column).
        title: the figure's title.
        font_size: the labels' size (larger for a projector).

    Returns:
        a figure whose traces named ``"cross"`` are the ``S`` edges from the notes to the word
        written at ``step``, in source order, each with its weight as ``customdata`` (also
        written beside each note); traces ``"discussion"``, ``"words"``, ``"notes"`` and
        ``"written"`` draw the rest.
    """
    cross = np.asarray(cross, dtype=float)
    discussion = np.asarray(discussion, dtype=float)
    n_s, n_t = len(source_words), len(written)
    if cross.shape != (n_t, n_s) or discussion.shape != (n_s, n_s):
        raise ValueError(f"cross {cross.shape} and discussion {discussion.shape} do not match "
                         f"{n_t} written and {n_s} source words")
    if not 0 <= step < n_t:
        raise ValueError(f"step {step} is outside the {n_t} steps")
    words, wrote = escape(source_words), escape(written)
    y_s, y_t = _ys(n_s), _ys(n_t)
    fig = go.Figure()
    for note in range(n_s):  # the discussion: each note reads the words it attended to
        for word in np.flatnonzero(discussion[note] >= DISCUSSION_FROM):
            w = float(discussion[note, word])
            fig.add_trace(go.Scatter(
                x=[X_WORDS, X_NOTES], y=[y_s[word], y_s[note]], mode="lines", name="discussion",
                line={"color": GUIDE_COLOR, "width": 0.5 + 5 * w}, opacity=0.35 + 0.5 * w,
                customdata=[w, w], showlegend=False,
                hovertemplate=_("note of “{note}” read “{word}”: %{{customdata:.2f}}").format(
                    note=words[note], word=words[word]) + EXTRA))
    row = cross[step]
    top = int(np.argmax(row))
    for note in range(n_s):
        w = float(row[note])
        fig.add_trace(go.Scatter(
            x=[X_NOTES, X_WRITER], y=[y_s[note], y_t[step]], mode="lines", name="cross",
            line={"color": HIGHLIGHT_COLOR, "width": 0.5 + 14 * w}, opacity=0.3 + 0.7 * w,
            customdata=[w, w], showlegend=False,
            hovertemplate=_("“{written}” read the note of “{word}”: %{{customdata:.3f}}").format(
                written=wrote[step], word=words[note]) + EXTRA))
    fig.add_trace(go.Scatter(
        x=[X_WORDS] * n_s, y=y_s, mode="markers+text", name="words", text=words,
        textposition="middle left", textfont={"size": font_size},
        marker={"size": font_size, "color": FILLS["embed"], "line": {"width": 1}},
        hovertemplate="%{text}" + EXTRA, showlegend=False))
    fig.add_trace(go.Scatter(
        x=[X_NOTES] * n_s, y=y_s, mode="markers+text", name="notes",
        text=[_("note {i}: {weight:.2f}").format(i=i, weight=row[i]) for i in range(n_s)],
        textposition="top left",
        textfont={"size": font_size, "color": SPECIAL_TOKEN_COLOR},
        marker={"size": font_size * 1.4, "symbol": "square", "color": FILLS["attention"],
                "line": {"width": [3 if n == top else 1 for n in range(n_s)],
                         "color": [HIGHLIGHT_COLOR if n == top else "#555555"
                                   for n in range(n_s)]}},
        customdata=words, showlegend=False,
        hovertemplate=_("the note of “%{{customdata}}”: {d} numbers").format(d=d_model) + EXTRA))
    fig.add_trace(go.Scatter(
        x=[X_WRITER] * n_t, y=y_t, mode="markers+text", name="written",
        text=[f"<b>{w}</b>" if t == step else w for t, w in enumerate(wrote)],
        textposition="middle right",
        textfont={"size": font_size, "color": [HIGHLIGHT_COLOR if t == step else
                                               SPECIAL_TOKEN_COLOR for t in range(n_t)]},
        marker={"size": font_size, "color": [HIGHLIGHT_COLOR if t == step else FILLS["output"]
                                             for t in range(n_t)], "line": {"width": 1}},
        hovertemplate="%{text}" + EXTRA, showlegend=False))
    head = max(n_s, n_t) / 2 + 0.6
    columns = ((X_WORDS, _("reading team (encoder)"),
                _("all {n} words at once").format(n=n_s)),
               (X_NOTES, _("notes (its output)"), _("{n} × {d}").format(n=n_s, d=d_model)),
               (X_WRITER, _("writing team (decoder)"), _("one word a step")))
    for x, name, detail in columns:
        fig.add_annotation(x=x, y=head, text=f"<b>{name}</b><br>{detail}", showarrow=False,
                           yanchor="bottom", font={"size": font_size})
    pitch = 2.4 * font_size
    fig.update_layout(title=title, height=int(max(n_s, n_t) * pitch + 4 * font_size + 120),
                      dragmode=False, showlegend=False, hovermode="closest",
                      margin={"l": 10, "r": 10, "t": 60 if title else 20, "b": 10},
                      meta={"projector": font_size >= 18})
    fig.update_xaxes(range=[-0.75, 2.75], visible=False, fixedrange=True)
    fig.update_yaxes(range=[-max(n_s, n_t) / 2 - 0.2, head + 1.6], visible=False,
                     fixedrange=True)
    return themed(fig)
