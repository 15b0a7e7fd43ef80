"""Explore: one head's attention as a heatmap, and every head of the layer side by side."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache import get_trace
from app_pages.common import DEFAULT_TEXT, settings

KIND_LABELS = {
    "encoder.self": "encoder self-attention",
    "decoder.self": "decoder masked self-attention",
    "decoder.cross": "decoder cross-attention (target → source)",
}

st.title("Explore attention")
spec, device = settings()
text = st.text_area("Text", DEFAULT_TEXT, key="text", height=80,
                    help="Type a sentence; words and punctuation become tokens.")
if not text.strip():
    st.info("Type some text to see its attention.")
    st.stop()
try:
    trace = get_trace(spec, device, text)
except ValueError as error:
    st.error(str(error))
    st.stop()

left, mid, right = st.columns([2, 1, 1])
name = left.selectbox("Attention", trace.names, key="kind",
                      format_func=lambda n: f"{n} · {KIND_LABELS[n]}")
n_layers = trace.layers(name)
layer = mid.selectbox("Layer", range(n_layers), key="layer") if n_layers > 1 else 0
head = right.selectbox("Head", range(trace.n_heads), key="head")

q_tokens, k_tokens = trace.axes(name)
allowed = trace.mask(name)
st.plotly_chart(
    viz.attention_heatmap(trace.weights(name, layer, head), q_tokens, k_tokens, allowed=allowed,
                          title=f"{name} · layer {layer} · head {head}"),
    key="head_heatmap")
st.caption("Rows: the token that is looking (query). Columns: the token it looks at (key). "
           "Each row sums to 1. Grey cells are masked: the model may not look there.")

st.subheader(f"All {trace.n_heads} heads of layer {layer}")
st.plotly_chart(viz.heads_grid(trace.layer_weights(name, layer), q_tokens, k_tokens,
                               allowed=allowed), key="heads_grid")
st.caption(f"{trace.model} · {trace.family} · {trace.n_layers} layers × {trace.n_heads} heads · "
           f"{trace.positional} positions · ran on {trace.device} ({trace.dtype})")
