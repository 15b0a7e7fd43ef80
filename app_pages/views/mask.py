"""Causal mask (lesson §3.4, step 2a): scores, the mask, −∞ above the diagonal, then softmax."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import heavy_work
from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import (
    kind_selector,
    self_attention_kinds,
    stepper,
    window_selector,
)
from app_pages.frame.markdown import literal
from app_pages.frame.run import load_run
from app_pages.frame.settings import kind_name, presenting
from i18n import _
from model.analysis import questions
from model.analysis.cuts import mask_panels, window
from viz.mask_view import PANELS

st.title(_("Causal mask"))
st.markdown(_("A decoder writing word *t* may not look at words after *t*: their scores become "
              "**−∞** before the softmax, so their weights are exactly **0**. The mask is "
              "lower-triangular (lesson §3.4, the decoder's mask); padding and sliding windows "
              "forbid more."))
run = load_run()
trace = run.trace
kinds = self_attention_kinds(trace, _("The causal mask"), _(
    "It needs no causal mask: its decoder cannot look at a later word because it has not read "
    "it yet."))
kinds = [n for n in kinds if n == "decoder.self"] or kinds
c1, c2, c3 = st.columns([2, 1, 1])
name = kind_selector(trace, c1, key="mask_kind", kinds=kinds)
if name != "decoder.self":
    st.info(_("{model} has no causal self-attention: its mask lets every token see every "
              "other (only padding would be masked).").format(model=literal(trace.model)))
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="mask_layer", container=c2)
head = widgets.selectbox(_("Head"), range(trace.n_heads), key="mask_head", container=c3)
q_tokens = trace.axes(name)[0]
widgets.derived((run.key, name), {"mask_window": 0})
start, stop = window_selector(len(q_tokens), 32, key="mask_window")
shown = window(trace, name, start, stop)
steps = stepper(_("Steps shown"), len(PANELS), key="mask_step",
                help=_("Reveal the four steps one at a time, as in class: ① scores, ② the mask, "
                       "③ −∞ where it forbids, ④ the softmax."))
st.markdown(_("**Step {step} of {steps}:** {panel}").format(
    step=steps, steps=len(PANELS), panel=_(PANELS[steps - 1])))
with heavy_work(_("computing the mask panels")):
    panels = mask_panels(trace, name, layer, head, shown)
chart(viz.mask_view(
    panels.scores, panels.allowed, panels.weights, shown.query_tokens, shown.key_tokens,
    title=_("{name} · layer {layer} · head {head}").format(name=kind_name(name), layer=layer,
                                                           head=head),
    query_hover=shown.query_labels,
    key_hover=shown.key_labels,
    special=(shown.query_special, shown.key_special), steps=steps,
    projector=presenting()), key="mask_view")  # larger cells, for text a room reads
st.caption(_("① every query scores every key; ② the model's mask; ③ forbidden scores set to "
             "−∞ (dark grey); ④ softmax of each row: the forbidden cells get weight 0."))
live.offer("mask", lambda: questions.forbidden_cells(trace, name, layer),
           lambda: questions.row_questions(trace, name, layer, head,
                                           range(start, stop)))
