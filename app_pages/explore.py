"""Explore: one head's attention as a heatmap, and every head of the layer side by side."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import heavy_work
from app_pages.common import chart, kind_selector, literal, load_run
from model.analysis.views import FIT_ABOVE, layer_view, query_rows, writes_words
from viz import export

st.title("Explore attention")
trace = load_run().trace
if "open_head" in st.session_state:  # a click in another view chose a head
    kind, layer_, head_ = st.session_state.pop("open_head")
    st.session_state.update(kind=kind, layer=layer_, head=head_)

left, mid, right = st.columns([2, 1, 1])
name = kind_selector(trace, left)
n_layers = trace.layers(name)
layer = widgets.selectbox("Layer", range(n_layers), key="layer", container=mid)
group = trace.n_heads // trace.n_kv_heads
head = widgets.selectbox("Head", range(trace.n_heads), key="head", container=right,
                         format_func=lambda h: f"{h} (K/V head {trace.kv_head(h)})" if group > 1
                         else str(h))

rows, k_tokens = query_rows(trace, name), trace.axes(name)[1]
COLOUR_SCALES = {"auto": None, "full": False, "fit": True}
scale = widgets.radio(
    "Colour scale", list(COLOUR_SCALES), key="colour_scale", horizontal=True,
    format_func={"auto": "automatic", "full": "0 to 1",
                 "fit": "fitted to this layer"}.get,
    help=f"Long inputs spread each row over many tokens, so every weight is small. Fitted, the "
         f"layer's largest weight is the darkest; automatic fits past {FIT_ABOVE} tokens.")
with heavy_work("drawing every head of the layer"):  # the layer's heads, pooled for drawing
    view = layer_view(trace, name, layer, head, fit=COLOUR_SCALES[scale])  # every head once
    heatmap = viz.attention_heatmap(
        view.weights, rows.labels, k_tokens, allowed=view.allowed,
        title=f"{name} · layer {layer} · head {head}", y_title=rows.title,
        special=(rows.special, trace.special(name)[1]), zmax=view.zmax, query_hover=rows.hover)
    grid = viz.heads_grid(view.layer_weights, rows.labels, k_tokens, allowed=view.allowed,
                          cols=3 if trace.n_heads % 3 == 0 else 4, zmax=view.zmax,
                          query_hover=rows.hover)
if view.fitted:
    st.caption(f"Colours fitted to this layer: the darkest colour is its largest weight away "
               f"from the first token, {view.zmax:.3f}; weights on the first token (often an "
               f"'attention sink') may be larger and are drawn darkest too.")
chart(heatmap, key="head_heatmap", name=(name, f"layer {layer}", f"head {head}"),
      table=lambda trace=trace, name=name, layer=layer, head=head: export.matrix_csv(
          np.where(trace.mask(name, layer), trace.weights(name, layer, head), np.nan),
          rows.labels, k_tokens, corner="query \\ key"))  # the weights shown, masked: empty
st.caption(("Rows: the word the decoder is writing (it reads the word before). "
            if writes_words(trace, name) else "Rows: the token that is looking (query). ")
           + "Columns: the token it looks at (key). Each row sums to 1. Grey cells are masked: "
             "the model may not look there. Grey italic labels are special tokens.")

st.subheader(f"All {trace.n_heads} heads of layer {layer}")
if group > 1:
    st.caption(f"Grouped-query attention: {trace.n_kv_heads} key/value heads, each shared by "
               f"{group} consecutive query heads.")
chart(grid, key="heads_grid", name=(name, f"layer {layer}", "all heads"))
st.caption(f"{literal(trace.model)} · {trace.family} · {trace.n_layers} layers × "
           f"{trace.n_heads} heads"
           f"{f' ({trace.n_kv_heads} K/V)' if group > 1 else ''} · {trace.positional} positions"
           f" · ran on {trace.device} ({trace.dtype})")
