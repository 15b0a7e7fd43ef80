"""Shapes and costs of the current run (lesson §3.5 and §3.8)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from app_pages.frame.charts import chart
from app_pages.frame.controls import self_attention_kinds
from app_pages.frame.markdown import literal
from app_pages.frame.run import load_run
from i18n import N_, _
from model.analysis.costs import attention_costs, longest_axis, parameter_split, stage_shapes
from viz.numbers import byte_size, short_count

# The parts of ``parameter_split``, as the page names them.
PARTS = {"attention": N_("attention"), "ffn": N_("ffn"), "embeddings": N_("embeddings"),
         "other": N_("other")}


st.title(_("Shapes and costs"))
run = load_run()
trace, d = run.trace, run.model.dims
self_attention_kinds(trace, _("Shapes and costs"), _(
    "Its tensors are a state of {width} numbers carried from word to word, not the (B, L, "
    "d_model) streams of lesson §3.5.").format(width=d.d_model))
st.markdown(_("**{model}**: d_model {d_model}, {n_heads} heads of d_head {d_head}, "
              "{n_kv_heads} key/value heads, FFN {d_ff}.").format(
    model=literal(trace.model), d_model=d.d_model, n_heads=d.n_heads, d_head=d.d_head,
    n_kv_heads=d.n_kv_heads, d_ff=d.d_ff))
st.subheader(_("Tensor shapes of this run (lesson §3.5, following the shapes)"))
st.dataframe(pd.DataFrame(stage_shapes(d, trace), columns=[_("stage"), _("shape"), _("note")]),
             hide_index=True)

st.subheader(_("Parameters"))
split = parameter_split(run.model)
cols = st.columns(4)
for col, key in zip(cols, PARTS):
    col.metric(_(PARTS[key]), short_count(split[key], digits=3),
               _("{share:.0%} of all").format(share=split[key] / split["total"]),
               delta_color="off", delta_arrow="off")
st.caption(_("Lesson §3.5, following the shapes: the FFN holds about 2/3 of a layer's "
             "parameters; attention routes, the FFN stores."))

st.subheader(_("Memory for this input"))
costs = attention_costs(d, trace)
c1, c2, c3 = st.columns(3)
c1.metric(_("attention weights, all layers and heads"), byte_size(costs["attention_bytes"]),
          _("{count:,} values").format(count=costs["attention_values"]), delta_color="off",
          delta_arrow="off")
c2.metric(_("KV cache for generation"), byte_size(costs["kv_cache_bytes"]))
c3.metric(_("KV cache without GQA"), byte_size(costs["kv_cache_bytes_without_gqa"]))
st.caption(_("Doubling the text quadruples the attention weights (O(n²); lesson §3.8, the cost "
             "of attention); grouped-query attention divides the KV cache by the number of "
             "query heads per K/V head."))

st.subheader(_("Complexity (lesson §4.8, attention against a recurrent layer)"))
chart(viz.complexity_curves(d.d_model, longest_axis(trace)), key="complexity")
st.caption(_("Self-attention costs n²·d per layer, a recurrent layer n·d²: while the text is "
             "shorter than the model is wide, attention does less work."))
