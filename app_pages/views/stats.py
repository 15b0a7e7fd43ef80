"""Head statistics: a layers × heads dashboard, a sortable table, aggregates and spans."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from app_pages.cache.getters import get_head_stats, get_mean
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.controls import bounded_analysis, kind_selector, metric_name, open_head
from app_pages.frame.events import selected_head
from app_pages.frame.run import load_run
from app_pages.frame.sink import sink_drawn, sink_toggle
from i18n import _
from model.analysis.cuts import boundary_label, query_rows, sentence_split
from model.analysis.statistics import STATS, defined_metrics, stats_table
from viz.sizes import HEAD_SIDE

st.title(_("Head statistics"))
run = load_run()
trace = run.trace
name = kind_selector(trace, key="st_kind")
bounded_analysis(run, name, _("Head statistics"))
stats = get_head_stats(run, name)
metrics = defined_metrics(stats)
metric = widgets.selectbox(_("Metric"), metrics, key="st_metric", format_func=metric_name)
event = chart(viz.stats_heatmap(stats[metric], metric_name(metric), _(STATS[metric])),
              key="stats_heatmap", on_select="rerun", selection_mode="points")
chosen = selected_head(event)
if chosen is not None:
    open_head(name, *chosen)

every_head = pd.DataFrame(stats_table(stats, metrics))
st.caption(_("Sort by clicking a column; select a row to open that head."))
shown = every_head.rename(columns={"layer": _("layer"), "head": _("head"),
                              **{m: metric_name(m) for m in metrics}})
selection = table(shown, key="stats_table", on_select="rerun", selection_mode="single-row",
                  hide_index=True, height=300)
if selection and selection.selection.rows:
    row = every_head.iloc[selection.selection.rows[0]]
    open_head(name, int(row["layer"]), int(row["head"]))

st.header(_("Aggregate and spans"))
c1, c2 = st.columns(2)
layers = widgets.multiselect(_("Layers"), range(trace.layers(name)),
                             default=[trace.layers(name) - 1], key="agg_layers", container=c1)
heads = widgets.multiselect(_("Heads"), range(trace.n_heads), default=list(range(trace.n_heads)),
                            key="agg_heads", container=c2)
if not layers or not heads:
    st.info(_("Choose at least one layer and one head."))
    st.stop()
rows, k_tokens = query_rows(trace, name), trace.axes(name)[1]
q_tokens = rows.labels
mean, mean_factors, _mass = get_mean(run, name, layers, heads, range(len(q_tokens)),
                                     range(len(k_tokens)), HEAD_SIDE)
sunk = sink_drawn(sink_toggle(), mean, trace.mask(name), mean_factors, str(k_tokens[0]))
chart(viz.attention_heatmap(sunk.weights, q_tokens, k_tokens, allowed=trace.mask(name),
                            factors=mean_factors, max_side=HEAD_SIDE, query_hover=rows.hover,
                            y_title=rows.title, zmax=sunk.zmax or 1.0,
                            title=_("Weights averaged over the chosen layers and heads")),
      key="aggregate")
if sunk.note:
    st.caption(sunk.note)
c3, c4 = st.columns(2)
q_cut = sentence_split(q_tokens, rows.special)
k_cut = sentence_split(k_tokens, trace.special(name)[1])
LABELLED = 512  # tokens up to which a span's ends are chosen by name; past it, by position


def span_slider(label: str, tokens, value: tuple[int, int], key: str, container, **kwargs):
    """A span ``(start, stop)`` of ``tokens``: its boundaries named by their tokens, or (long
    inputs, where a name per position would weigh on the page) by position, with the tokens
    at its ends written below."""
    if len(tokens) <= LABELLED:
        return widgets.select_slider(label, range(len(tokens) + 1), value, key=key,
                                     container=container,
                                     format_func=lambda i: boundary_label(tokens, i), **kwargs)
    start, stop = widgets.slider(label, 0, len(tokens), value, key=key, container=container,
                                 **kwargs)
    container.caption(f"{boundary_label(tokens, start)} → {boundary_label(tokens, stop)}")
    return start, stop


widgets.derived((run.key, name), {"span_q": (q_cut, len(q_tokens)), "span_k": (0, k_cut)})
qa, qb = span_slider(
    _("Query span (e.g. sentence B)"), q_tokens, (q_cut, len(q_tokens)), "span_q", c3,
    help=_("From the first token of the span up to (not including) the last boundary."))
ka, kb = span_slider(_("Key span (e.g. sentence A)"), k_tokens, (0, k_cut), "span_k", c4)
if qb > qa and kb > ka:
    block, block_factors, mass = get_mean(run, name, layers, heads, range(qa, qb),
                                          range(ka, kb), HEAD_SIDE)
    st.metric(_("Share of the query span's attention on the key span"), f"{mass:.1%}")
    chart(viz.attention_heatmap(block, q_tokens[qa:qb], list(k_tokens[ka:kb]),
                                factors=block_factors, max_side=HEAD_SIDE,
                                title=_("Query span → key span")), key="span")
else:
    st.info(_("Each span needs at least one token: move its two ends apart."))
