"""The sink toggle of the heatmap pages: leave the attention sink out of each row and
renormalise the rest (:func:`model.analysis.faithfulness.sink_left_out`), with the recipe and
the mass left out said under the chart; the colour scale follows the renormalised weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from i18n import _
from model.analysis.faithfulness import sink_left_out

SINK = "sink_out"  # the toggle's session key (and, in a link, ?sink=1)


def sink_toggle(container=st) -> bool:
    """The toggle, off unless chosen; a remembered value that is not on or off is forgotten."""
    if not isinstance(st.session_state.get(SINK, False), bool):
        st.session_state.pop(SINK)
    return container.toggle(
        _("Leave the sink out"), key=SINK,
        help=_("Many heads park most of each row on the first token (an 'attention sink'), "
               "which washes out the rest. On: that column is left out and each row divided "
               "by what is left, w′ = w / (1 − w_first); a model with learned sinks (weight "
               "that goes to no token) has its rows divided by their sums instead."))


@dataclass(frozen=True)
class Drawn:
    """What a heatmap draws with the toggle applied.

    Attributes:
        weights: the weights to draw.
        zmax: the colour scale's top (None: the page's own).
        note: what was done, for the caption ("" when nothing was).
        short: the same in a few words, for a chart's subtitle.
    """

    weights: np.ndarray
    zmax: float | None
    note: str
    short: str = ""


def sink_drawn(on: bool, weights: np.ndarray, allowed: np.ndarray | None = None,
               factors: tuple[int, int] = (1, 1), first_token: str = "") -> Drawn:
    """``weights`` (one head ``[query, key]`` or heads ``[head, query, key]``) with the sink
    left out when ``on``; pooled blocks (``factors`` ≠ 1) are drawn as they are, and the note
    says why."""
    if not on:
        return Drawn(weights, None, "")
    if tuple(factors) != (1, 1):
        return Drawn(weights, None, _("The sink is left out only where a heatmap is drawn token "
                                      "by token: this long input is drawn in blocks, and its "
                                      "first block holds other tokens too."))
    view = sink_left_out(weights, allowed)
    finite = view.weights[np.isfinite(view.weights)]
    zmax = float(finite.max()) if finite.size else 1.0
    live = view.left_out[np.isfinite(view.left_out)]
    mean, most = (float(live.mean()), float(live.max())) if live.size else (0.0, 0.0)
    if view.learned:
        note = _("Learned sink left out: each row divided by its sum (the sink took {mean:.1%} "
                 "of a row on average, at most {most:.1%}).").format(mean=mean, most=most)
    else:
        note = _("Sink left out: the first token ({token}) held {mean:.1%} of a row on average, "
                 "at most {most:.1%}; each row is divided by the rest, w′ = w / (1 − w_first), "
                 "so the rows sum to 1 again. Colours run to the largest weight left, "
                 "{zmax:.3f}.").format(token=first_token, mean=mean, most=most, zmax=zmax)
    if np.isnan(view.weights).all(axis=-1).any():
        note += " " + _("A row with nothing but the sink (a causal model's first row) is left "
                        "blank.")
    short = _("sink left out ({mean:.0%} of a row on average), rows renormalised").format(
        mean=mean)
    return Drawn(view.weights, max(zmax, 1e-6), note, short)
