"""Shapes and costs of the current run (lesson §3.5 and §3.8)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from app_pages.common import chart, literal, load_run
from model.analysis.costs import attention_costs, longest_axis, parameter_split, stage_shapes


def _size(n_bytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{n_bytes:,.1f} {unit}" if unit != "B" else f"{n_bytes:,.0f} B"
        n_bytes /= 1024
    return ""


st.title("Shapes and costs")
run = load_run()
trace, d = run.trace, run.model.dims
st.markdown(f"**{literal(trace.model)}**: d_model {d.d_model}, {d.n_heads} heads of d_head "
            f"{d.d_head}, {d.n_kv_heads} key/value heads, FFN {d.d_ff}.")
st.subheader("Tensor shapes of this run (lesson §3.5, following the shapes)")
st.dataframe(pd.DataFrame(stage_shapes(d, trace), columns=["stage", "shape", "note"]),
             hide_index=True)

st.subheader("Parameters")
split = parameter_split(run.model)
cols = st.columns(4)
for col, key in zip(cols, ("attention", "ffn", "embeddings", "other")):
    col.metric(key, f"{split[key] / 1e6:.2f} M", f"{split[key] / split['total']:.0%} of all",
               delta_color="off", delta_arrow="off")
st.caption("Lesson §3.5, following the shapes: the FFN holds about 2/3 of a layer's parameters; "
           "attention routes, the FFN stores.")

st.subheader("Memory for this input")
costs = attention_costs(d, trace)
c1, c2, c3 = st.columns(3)
c1.metric("attention weights, all layers and heads", _size(costs["attention_bytes"]),
          f"{costs['attention_values']:,} values", delta_color="off", delta_arrow="off")
c2.metric("KV cache for generation", _size(costs["kv_cache_bytes"]))
c3.metric("KV cache without GQA", _size(costs["kv_cache_bytes_without_gqa"]))
st.caption("Doubling the text quadruples the attention weights (O(n²); lesson §3.8, the cost "
           "of attention); grouped-query attention divides the KV cache by the number of query "
           "heads per K/V head.")

st.subheader("Complexity (lesson §4.8, attention against a recurrent layer)")
chart(viz.complexity_curves(d.d_model, longest_axis(trace)), key="complexity")
st.caption("Self-attention costs n²·d per layer, a recurrent layer n·d²: while the text is "
           "shorter than the model is wide, attention does less work.")
