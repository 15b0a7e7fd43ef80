"""Head view: lines from each token to the tokens it attends to, several heads at once."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.common import kind_selector, load_trace, window_selector

st.title("Head view")
_, trace = load_trace()
left, right = st.columns([2, 1])
name = kind_selector(trace, left, key="hv_kind")
layer = right.selectbox("Layer", range(trace.layers(name)), key="hv_layer")
heads = st.multiselect("Heads (each in its colour)", range(trace.n_heads), default=[0, 1],
                       key="hv_heads")
q_tokens, k_tokens = trace.axes(name)
start, stop = window_selector(max(len(q_tokens), len(k_tokens)), 80, key="hv_window")
q_slice = slice(start, min(stop, len(q_tokens)))
k_slice = slice(start, min(stop, len(k_tokens))) if name.endswith(".self") else slice(None)
q_shown, k_shown = list(q_tokens[q_slice]), list(k_tokens[k_slice])
labels = [f"{start + i}: {t}" for i, t in enumerate(q_shown)]
if "hv_focus_clicked" in st.session_state:  # a click on a token in the last run
    st.session_state["hv_focus"] = st.session_state.pop("hv_focus_clicked")
focus = st.selectbox("Focus on one token", [None, *range(len(q_shown))], key="hv_focus",
                     format_func=lambda i: "all tokens" if i is None else labels[i],
                     help="Or click a token in the left column.")
weights = trace.layer_weights(name, layer)[:, q_slice, k_slice]
titles = ("target", "source") if name == "decoder.cross" else ("query", "key")
if not heads:
    st.info("Choose at least one head.")
    st.stop()
event = st.plotly_chart(
    viz.head_view(weights, q_shown, k_shown, heads=heads, focus=focus,
                  title=f"{name} · layer {layer}", left_title=titles[0], right_title=titles[1]),
    key="head_view", on_select="rerun", selection_mode="points")
points = event["selection"]["points"] if event and "selection" in event else []
for point in points:
    if point.get("x") == 0 and "customdata" in point:  # a token of the left column
        if int(point["customdata"]) != focus:
            st.session_state["hv_focus_clicked"] = int(point["customdata"])
            st.rerun()
st.caption("A line's opacity is the attention weight (lines under 0.02 are left out).")
