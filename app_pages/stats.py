"""Head statistics: a layers × heads dashboard, a sortable table, aggregates and spans."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import get_head_stats
from app_pages.common import kind_selector, load_run, open_head
from app_pages.events import selected_head
from model.analysis.statistics import (
    STATS,
    aggregate,
    defined_metrics,
    span_attention,
    stats_table,
)
from model.analysis.views import query_rows

st.title("Head statistics")
run = load_run()
trace = run.trace
name = kind_selector(trace, key="st_kind")
stats = get_head_stats(run.key, name)
metrics = defined_metrics(stats)
metric = widgets.selectbox("Metric", metrics, key="st_metric")
event = st.plotly_chart(viz.stats_heatmap(stats[metric], metric, STATS[metric]),
                        key="stats_heatmap", on_select="rerun", selection_mode="points")
chosen = selected_head(event)
if chosen is not None:
    open_head(name, *chosen)

table = pd.DataFrame(stats_table(stats, metrics))
st.caption("Sort by clicking a column; select a row to open that head.")
selection = st.dataframe(table, key="stats_table", on_select="rerun", selection_mode="single-row",
                         hide_index=True, height=300)
if selection and selection.selection.rows:
    row = table.iloc[selection.selection.rows[0]]
    open_head(name, int(row["layer"]), int(row["head"]))

st.header("Aggregate and spans")
c1, c2 = st.columns(2)
layers = widgets.multiselect("Layers", range(trace.layers(name)),
                             default=[trace.layers(name) - 1], key="agg_layers", container=c1)
heads = widgets.multiselect("Heads", range(trace.n_heads), default=list(range(trace.n_heads)),
                            key="agg_heads", container=c2)
if not layers or not heads:
    st.info("Choose at least one layer and one head.")
    st.stop()
mean = aggregate(trace, name, layers, heads)
rows, k_tokens = query_rows(trace, name), trace.axes(name)[1]
q_tokens = rows.labels
st.plotly_chart(viz.attention_heatmap(mean, q_tokens, k_tokens, allowed=trace.mask(name),
                                      query_hover=rows.hover, y_title=rows.title,
                                      title="Weights averaged over the chosen layers and heads"),
                key="aggregate")
c3, c4 = st.columns(2)
qa, qb = widgets.slider("Query span (e.g. sentence B)", 0, len(q_tokens),
                        (len(q_tokens) // 2, len(q_tokens)), key="span_q", container=c3)
ka, kb = widgets.slider("Key span (e.g. sentence A)", 0, len(k_tokens), (0, len(k_tokens) // 2),
                        key="span_k", container=c4)
if qb > qa and kb > ka:
    block, mass = span_attention(mean, (qa, qb), (ka, kb))
    st.metric("Share of the query span's attention on the key span", f"{mass:.1%}")
    st.plotly_chart(viz.attention_heatmap(block, q_tokens[qa:qb], k_tokens[ka:kb],
                                          title="Query span → key span"), key="span")
