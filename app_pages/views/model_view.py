"""Model view: every layer and head at once; click a tile to open that head."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import get_model_view
from app_pages.frame.charts import chart
from app_pages.frame.controls import bounded_analysis, kind_selector, open_head
from app_pages.frame.events import selected_head
from app_pages.frame.run import load_run
from i18n import _

st.title(_("Model view"))
run = load_run()
trace = run.trace
name = kind_selector(trace, key="mv_kind")
bounded_analysis(run, name, _("The model view"))
st.caption(_("{n_layers} layers × {n_heads} heads. Each tile is one head's attention (rows: "
             "queries, columns: keys). Click a tile to open it."
             ).format(n_layers=trace.layers(name), n_heads=trace.n_heads))
event = chart(get_model_view(run, name), key="model_view", on_select="rerun",
                        selection_mode="points")
chosen = selected_head(event)
if chosen is not None:
    open_head(name, *chosen)
