"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import get_rollout
from app_pages.common import chart, kind_selector, load_run
from model.analysis.rollout import (
    SINK_SHARE,
    first_token_share,
    off_diagonal_peak,
    without_first_token,
)
from model.analysis.views import FIT_ABOVE, query_rows

st.title("Attention rollout")
st.warning("Attention weights show where a model looked, not why it decided: rollout is a "
           "rough picture of information flow, not an explanation.")
run = load_run()
trace = run.trace
kinds = [n for n in trace.names if n.endswith(".self")]
name = kind_selector(trace, key="ro_kind", kinds=kinds)
flows = get_rollout(run.key, name)
layer = widgets.slider("Through layer", 0, len(flows) - 1, len(flows) - 1, key="ro_layer")
rows, tokens = query_rows(trace, name), list(trace.axes(name)[1])
flow, allowed, key_special = flows[layer], trace.mask(name, 0), trace.special(name)[1]
share = first_token_share(flow)
first = widgets.radio(
    "First token", ["auto", "keep", "leave out"], key="ro_first", horizontal=True,
    help=f"Many models park most attention on the first token (an 'attention sink'), which "
         f"hides the rest. Automatic leaves its column out when it holds more than "
         f"{SINK_SHARE:.0%} of the weight.")
leave_out = first == "leave out" or (first == "auto" and share > SINK_SHARE)
title = f"Rollout of {name} through layers 0–{layer}"
if leave_out and len(tokens) > 1:
    flow, allowed, tokens = without_first_token(flow), allowed[:, 1:], tokens[1:]
    key_special = [p - 1 for p in key_special if p > 0]
    title += (f"<br><sup>first token left out (it held {share:.0%} of the weight); each row "
              f"rescaled to sum to 1</sup>")
zmax = 1.0
if len(tokens) > FIT_ABOVE:  # long inputs: fit the colours to what moved between tokens
    zmax = off_diagonal_peak(flow, key_offset=1 if leave_out else 0)
    title += f"<br><sup>colours fitted: the darkest cell off the diagonal is {zmax:.3f}</sup>"
chart(viz.attention_heatmap(
    flow, rows.labels, tokens, allowed=allowed, query_hover=rows.hover, y_title=rows.title,
    special=(rows.special, key_special), title=title, zmax=zmax), key="rollout")
st.caption("Per layer: average the heads, add the identity for the residual connection, "
           "renormalise each row, multiply with the layers below.")
