"""Model view: every layer and head at once; click a tile to open that head."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache import get_model_view
from app_pages.common import inputs, kind_selector, load_trace, open_head

st.title("Model view")
_, trace = load_trace()
name = kind_selector(trace, key="mv_kind")
st.caption(f"{trace.layers(name)} layers × {trace.n_heads} heads. Each tile is one head's "
           "attention (rows: queries, columns: keys). Click a tile to open it.")
event = st.plotly_chart(get_model_view(*inputs(), name), key="model_view", on_select="rerun",
                        selection_mode="points")
chosen = viz.selected_head(event)
if chosen is not None:
    open_head(name, *chosen)
