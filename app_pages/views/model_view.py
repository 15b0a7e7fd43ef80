"""Model view: every layer and head at once; click a tile to open that head."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import get_model_view
from app_pages.frame.charts import chart
from app_pages.frame.controls import bounded_analysis, kind_selector, open_head
from app_pages.frame.events import selected_head
from app_pages.frame.run import load_run
from app_pages.frame.sink import sink_toggle
from i18n import _
from viz.sizes import TILE_SIDE

st.title(_("Model view"))
run = load_run()
trace = run.trace
left, right = st.columns([3, 1], vertical_alignment="bottom")
name = kind_selector(trace, left, key="mv_kind")
sink_on = sink_toggle(right)  # beside the menu: the tiles stay where a first screen shows them
bounded_analysis(run, name, _("The model view"))
st.caption(_("{n_layers} layers × {n_heads} heads. Each tile is one head's attention (rows: "
             "queries, columns: keys). Click a tile to open it."
             ).format(n_layers=trace.layers(name), n_heads=trace.n_heads))
exact = max(len(axis) for axis in trace.axes(name)) <= TILE_SIDE  # every tile token by token
if sink_on:
    st.caption(_("Sink left out of every tile: the first token's column dropped and each row "
                 "divided by the rest, w′ = w / (1 − w_first), so the rows sum to 1 again.")
               if exact else
               _("The sink is left out only where a heatmap is drawn token by token: this long "
                 "input is drawn in blocks, and its first block holds other tokens too."))
event = chart(get_model_view(run, name, sink=sink_on and exact), key="model_view",
              on_select="rerun", selection_mode="points")
chosen = selected_head(event)
if chosen is not None:
    open_head(name, *chosen)
