"""Head view: lines from each token to the tokens it attends to, several heads at once."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import heavy_work
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import kind_selector, window_selector
from app_pages.frame.events import clicked_token
from app_pages.frame.run import load_run
from app_pages.frame.settings import kind_name
from i18n import _
from model.analysis.cuts import window, window_weights, writes_words
from viz.style import head_label

st.title(_("Head view"))
run = load_run()
trace = run.trace
left, right = st.columns([2, 1])
name = kind_selector(trace, left, key="hv_kind")
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="hv_layer", container=right)
heads = widgets.multiselect(_("Heads (each in its colour)"), range(trace.n_heads),
                            default=[0, 1], key="hv_heads", format_func=head_label,
                            help=_("The dot's colour is the colour of the head's lines; heads "
                                   "8–15 have squares and dashed lines."))
q_tokens, k_tokens = trace.axes(name)
widgets.derived((run.key, name), {"hv_window": 0, "hv_focus": None})
start, stop = window_selector(max(len(q_tokens), len(k_tokens)), 80, key="hv_window")
shown = window(trace, name, start, stop)
labels = shown.query_labels  # "position: token" (decoder rows: the word written and read)
if "hv_focus_clicked" in st.session_state:  # a click on a token in the last run
    st.session_state["hv_focus"] = st.session_state.pop("hv_focus_clicked")
focus = widgets.selectbox(_("Focus on one token"), [None, *range(len(labels))],
                          key="hv_focus",
                          format_func=lambda i: _("all tokens") if i is None else labels[i],
                          help=_("Or click a token in the left column."))
titles = (_("target: word written"), _("source")) if name == "decoder.cross" else (
    (_("word written"), _("word read")) if writes_words(trace, name) else (_("query"), _("key")))
if not heads:
    st.info(_("Choose at least one head."))
    st.stop()
with heavy_work(_("computing the heads")):
    weights = window_weights(trace, name, layer, shown)
event = chart(
    viz.head_view(weights, shown.query_tokens,
                  shown.key_tokens, heads=heads, focus=focus,
                  title=_("{name} · layer {layer}").format(name=kind_name(name), layer=layer),
                  left_title=titles[0], right_title=titles[1], query_hover=labels,
                  key_hover=shown.key_labels),
    key="head_view", on_select="rerun", selection_mode="points")
token = clicked_token(event)
if token is not None and token != focus:
    st.session_state["hv_focus_clicked"] = token
    st.rerun()
st.caption(_("A line's opacity is the attention weight (lines under 0.02 are left out)."))
