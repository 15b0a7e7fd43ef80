"""Attention rollout (Abnar & Zuidema 2020) through a self-attention stack."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import get_rollout
from app_pages.frame import widgets
from app_pages.frame.common import bounded_analysis, chart, kind_selector, load_run
from i18n import N_, _
from model.analysis.cuts import query_rows
from model.analysis.rollout import SINK_SHARE, blocks_peak, rollout_factor, rollout_view
from model.analysis.statistics import ROLLOUT_SIDE
from viz.pooling import pool_allowed, pool_weights

st.title(_("Attention rollout"))
st.warning(_("Attention weights show where a model looked, not why it decided: rollout is a "
             "rough picture of information flow, not an explanation."))
run = load_run()
trace = run.trace
kinds = [n for n in trace.names if n.endswith(".self")]
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
k_tokens, mask = list(trace.axes(name)[1]), trace.mask(name, 0)
if factor == 1:
    allowed, k_labels, k_special = mask, k_tokens, trace.special(name)[1]
else:  # a long input rolls out blocks of tokens
    allowed, k_labels, k_special = pool_allowed(mask, factor, factor), k_tokens[::factor], []
    st.info(_("{n:,} tokens: rollout multiplies blocks of {factor} tokens (each layer's "
              "attention pooled first: a block's rows averaged, its keys summed). It is exact "
              "up to {side:,} tokens; here it approximates the exact rollout.").format(
        n=len(trace.axes(name)[0]), factor=factor, side=ROLLOUT_SIDE))
view = rollout_view(flows[layer], allowed, k_labels, k_special, first=first)
SIDE = 256  # cells a side drawn
again = -(-max(view.flow.shape) // SIDE)  # blocks pooled again to be drawn
drawn = pool_weights(view.flow, again, again) if again > 1 else view.flow
step = factor * again  # tokens a side of a drawn cell
first_key = factor if view.left_out else 0  # the keys left out with the first block
zmax = view.zmax if view.zmax >= 1 or step == 1 else blocks_peak(
    drawn, len(rows.labels), step, first_key)  # fitted to what is drawn
title = _("Rollout of {name} through layers 0–{layer}").format(name=name, layer=layer)
if view.left_out:
    title += "<br><sup>" + (_(
        "first token left out (it held {share:.0%} of the weight); each row rescaled to sum "
        "to 1") if factor == 1 else _(
        "first block ({factor} tokens) left out (it held {share:.0%} of the weight); each row "
        "rescaled to sum to 1")).format(share=view.sink_share, factor=factor) + "</sup>"
if zmax < 1:
    title += "<br><sup>" + _("colours fitted: the darkest cell off the diagonal is "
                             "{zmax:.3f}").format(zmax=zmax) + "</sup>"
if step == 1:
    figure = viz.attention_heatmap(
        view.flow, rows.labels, view.key_tokens, allowed=view.allowed, query_hover=rows.hover,
        y_title=rows.title, special=(rows.special, view.key_special), title=title,
        zmax=zmax, max_side=SIDE)
else:  # blocks (of blocks), named by their tokens
    figure = viz.attention_heatmap(
        drawn, rows.labels, k_tokens[first_key:], allowed=mask[:, first_key:],
        factors=(step, step), max_side=SIDE, y_title=rows.title, title=title, zmax=zmax)
chart(figure, key="rollout")
st.caption(_("Per layer: average the heads, add the identity for the residual connection, "
             "renormalise each row, multiply with the layers below."))
