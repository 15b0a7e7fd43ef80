"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import get_rollout
from app_pages.common import bounded_analysis, chart, kind_selector, load_run
from model.analysis.rollout import SINK_SHARE, rollout_view
from model.analysis.views import query_rows

st.title("Attention rollout")
st.warning("Attention weights show where a model looked, not why it decided: rollout is a "
           "rough picture of information flow, not an explanation.")
run = load_run()
trace = run.trace
kinds = [n for n in trace.names if n.endswith(".self")]
name = kind_selector(trace, key="ro_kind", kinds=kinds)
bounded_analysis(run, name, "Rollout")
flows = get_rollout(run, name)
layer = widgets.slider("Through layer", 0, len(flows) - 1, len(flows) - 1, key="ro_layer")
rows = query_rows(trace, name)
first = widgets.radio(
    "First token", ["auto", "keep", "leave out"], key="ro_first", horizontal=True,
    help=f"Many models park most attention on the first token (an 'attention sink'), which "
         f"hides the rest. Automatic leaves its column out when it holds more than "
         f"{SINK_SHARE:.0%} of the weight.")
view = rollout_view(flows[layer], trace.mask(name, 0), trace.axes(name)[1],
                    trace.special(name)[1], first=first)
title = f"Rollout of {name} through layers 0–{layer}"
if view.left_out:
    title += (f"<br><sup>first token left out (it held {view.sink_share:.0%} of the weight); "
              f"each row rescaled to sum to 1</sup>")
if view.zmax < 1:
    title += (f"<br><sup>colours fitted: the darkest cell off the diagonal is "
              f"{view.zmax:.3f}</sup>")
chart(viz.attention_heatmap(
    view.flow, rows.labels, view.key_tokens, allowed=view.allowed, query_hover=rows.hover,
    y_title=rows.title, special=(rows.special, view.key_special), title=title, zmax=view.zmax),
    key="rollout")
st.caption("Per layer: average the heads, add the identity for the residual connection, "
           "renormalise each row, multiply with the layers below.")
