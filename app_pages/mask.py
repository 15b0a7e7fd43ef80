"""Causal mask (seed 3.4 step 2a): scores, the mask, −∞ above the diagonal, then softmax."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.common import kind_selector, load_trace, window_selector

st.title("Causal mask")
st.markdown("A decoder writing word *t* may not look at words after *t*: their scores become "
            "**−∞** before the softmax, so their weights are exactly **0**. The mask is "
            "lower-triangular (seed 3.4); padding and sliding windows forbid more.")
_, trace = load_trace()
kinds = [n for n in trace.names if n == "decoder.self"] or list(trace.names)
c1, c2, c3 = st.columns([2, 1, 1])
name = kind_selector(trace, c1, key="mask_kind", kinds=kinds)
if name != "decoder.self":
    st.info(f"{trace.model} has no causal self-attention: its mask lets every token see every "
            "other (only padding would be masked).")
layer = c2.selectbox("Layer", range(trace.layers(name)), key="mask_layer")
head = c3.selectbox("Head", range(trace.n_heads), key="mask_head")
q_tokens, k_tokens = trace.axes(name)
start, stop = window_selector(len(q_tokens), 32, key="mask_window")
try:
    scores = trace.scores(name, layer, head)
except ValueError as error:
    st.error(str(error))
    st.stop()
window = slice(start, stop)
key_window = window if name.endswith(".self") else slice(None)
st.plotly_chart(viz.mask_view(
    scores[window, key_window], trace.mask(name, layer)[window, key_window],
    trace.weights(name, layer, head)[window, key_window], list(q_tokens[window]),
    list(k_tokens[key_window]), title=f"{name} · layer {layer} · head {head}"),
    key="mask_view")
st.caption("① every query scores every key; ② the model's mask; ③ forbidden scores set to −∞ "
           "(black); ④ softmax of each row: the forbidden cells get weight 0.")
