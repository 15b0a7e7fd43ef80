"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import get_rollout
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import bounded_analysis, kind_selector, self_attention_kinds
from app_pages.frame.run import load_run
from app_pages.frame.settings import kind_name
from i18n import N_, _
from model.analysis.cuts import query_rows
from model.analysis.rollout import SINK_SHARE, rollout_factor, rollout_view
from model.analysis.statistics import ROLLOUT_SIDE
from viz.rollout import drawn_rollout

st.title(_("Attention rollout"))
st.warning(_("Attention weights show where a model looked, not why it decided: rollout is a "
             "rough picture of information flow, not an explanation."))
run = load_run()
trace = run.trace
kinds = self_attention_kinds(trace, _("Rollout"))
name = kind_selector(trace, key="ro_kind", kinds=kinds)
bounded_analysis(run, name, _("Rollout"))
flows = get_rollout(run, name)
layer = widgets.slider(_("Through layer"), 0, len(flows) - 1, len(flows) - 1, key="ro_layer")
rows = query_rows(trace, name)
FIRST_TOKEN = {"auto": N_("auto"), "keep": N_("keep"), "leave out": N_("leave out")}
first = widgets.radio(
    _("First token"), list(FIRST_TOKEN), key="ro_first", horizontal=True,
    format_func=lambda choice: _(FIRST_TOKEN[choice]),
    help=_("Many models park most attention on the first token (an 'attention sink'), which "
           "hides the rest. Automatic leaves its column out when it holds more than "
           "{share:.0%} of the weight.").format(share=SINK_SHARE))
factor = rollout_factor(len(trace.axes(name)[0]))
if factor > 1:  # a long input rolls out blocks of tokens
    st.info(_("{n:,} tokens: rollout multiplies blocks of {factor} tokens (each layer's "
              "attention pooled first: a block's rows averaged, its keys summed). It is exact "
              "up to {side:,} tokens; here it approximates the exact rollout.").format(
        n=len(trace.axes(name)[0]), factor=factor, side=ROLLOUT_SIDE))
view = rollout_view(flows[layer], trace.mask(name, 0), trace.axes(name)[1],
                    trace.special(name)[1], first=first, factor=factor)
drawn = drawn_rollout(view.flow, len(rows.labels), factor=factor, first_key=view.first_key,
                      zmax=view.zmax)
title = _("Rollout of {name} through layers 0–{layer}").format(name=kind_name(name), layer=layer)
if view.left_out:
    title += "<br><sup>" + (_(
        "first token left out (it held {share:.0%} of the weight); each row rescaled to sum "
        "to 1") if factor == 1 else _(
        "first block ({factor} tokens) left out (it held {share:.0%} of the weight); each row "
        "rescaled to sum to 1")).format(share=view.sink_share, factor=factor) + "</sup>"
if drawn.zmax < 1:
    title += "<br><sup>" + _("colours fitted: the darkest cell off the diagonal is "
                             "{zmax:.3f}").format(zmax=drawn.zmax) + "</sup>"
chart(viz.rollout_heatmap(drawn, rows.labels, view.key_tokens, allowed=view.allowed,
                          query_hover=rows.hover, y_title=rows.title,
                          special=(rows.special, view.key_special), title=title),
      key="rollout")
st.caption(_("Per layer: average the heads, add the identity for the residual connection, "
             "renormalise each row, multiply with the layers below."))
