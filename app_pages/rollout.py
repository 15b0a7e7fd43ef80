"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import get_rollout
from app_pages.common import kind_selector, load_run
from model.analysis.views import query_rows

st.title("Attention rollout")
st.warning("Attention weights show where a model looked, not why it decided: rollout is a "
           "rough picture of information flow, not an explanation.")
run = load_run()
trace = run.trace
kinds = [n for n in trace.names if n.endswith(".self")]
name = kind_selector(trace, key="ro_kind", kinds=kinds)
flows = get_rollout(run.key, name)
layer = widgets.slider("Through layer", 0, len(flows) - 1, len(flows) - 1, key="ro_layer")
rows, tokens = query_rows(trace, name), trace.axes(name)[1]
st.plotly_chart(viz.attention_heatmap(
    flows[layer], rows.labels, tokens, allowed=trace.mask(name, 0), query_hover=rows.hover,
    y_title=rows.title, special=(rows.special, trace.special(name)[1]),
    title=f"Rollout of {name} through layers 0–{layer}"), key="rollout")
st.caption("Per layer: average the heads, add the identity for the residual connection, "
           "renormalise each row, multiply with the layers below.")
