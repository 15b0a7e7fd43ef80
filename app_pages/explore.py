"""Explore: one head's attention as a heatmap, and every head of the layer side by side."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import heavy_work
from app_pages.common import chart, kind_selector, literal, load_run
from i18n import _
from model.analysis.views import FIT_ABOVE, layer_view, query_rows, writes_words
from viz import export

st.title(_("Explore attention"))
trace = load_run().trace
if "open_head" in st.session_state:  # a click in another view chose a head
    kind, layer_, head_ = st.session_state.pop("open_head")
    st.session_state.update(kind=kind, layer=layer_, head=head_)

left, mid, right = st.columns([2, 1, 1])
name = kind_selector(trace, left)
n_layers = trace.layers(name)
layer = widgets.selectbox(_("Layer"), range(n_layers), key="layer", container=mid)
group = trace.n_heads // trace.n_kv_heads
head = widgets.selectbox(
    _("Head"), range(trace.n_heads), key="head", container=right,
    format_func=lambda h: _("{head} (K/V head {kv_head})").format(head=h, kv_head=trace.kv_head(h))
    if group > 1 else str(h))

rows, k_tokens = query_rows(trace, name), trace.axes(name)[1]
COLOUR_SCALES = {"auto": None, "full": False, "fit": True}
scale = widgets.radio(
    _("Colour scale"), list(COLOUR_SCALES), key="colour_scale", horizontal=True,
    format_func={"auto": _("automatic"), "full": _("0 to 1"),
                 "fit": _("fitted to this layer")}.get,
    help=_("Long inputs spread each row over many tokens, so every weight is small. Fitted, the "
           "layer's largest weight is the darkest; automatic fits past {fit_above} tokens."
           ).format(fit_above=FIT_ABOVE))
# the layer's heads, pooled for drawing
with heavy_work(_("drawing every head of the layer")):
    view = layer_view(trace, name, layer, head, fit=COLOUR_SCALES[scale])  # every head once
    heatmap = viz.attention_heatmap(
        view.weights, rows.labels, k_tokens, allowed=view.allowed,
        title=_("{name} · layer {layer} · head {head}").format(name=name, layer=layer, head=head),
        y_title=rows.title, special=(rows.special, trace.special(name)[1]), zmax=view.zmax,
        query_hover=rows.hover)
    grid = viz.heads_grid(view.layer_weights, rows.labels, k_tokens, allowed=view.allowed,
                          cols=3 if trace.n_heads % 3 == 0 else 4, zmax=view.zmax,
                          query_hover=rows.hover)
if view.fitted:
    st.caption(_("Colours fitted to this layer: the darkest colour is its largest weight away "
                 "from the first token, {zmax:.3f}; weights on the first token (often an "
                 "'attention sink') may be larger and are drawn darkest too."
                 ).format(zmax=view.zmax))
chart(heatmap, key="head_heatmap", name=(name, f"layer {layer}", f"head {head}"),
      table=lambda trace=trace, name=name, layer=layer, head=head: export.matrix_csv(
          np.where(trace.mask(name, layer), trace.weights(name, layer, head), np.nan),
          rows.labels, k_tokens, corner="query \\ key"))  # the weights shown, masked: empty
st.caption(_("Rows: the word the decoder is writing (it reads the word before). Columns: the "
             "token it looks at (key). Each row sums to 1. Grey cells are masked: the model may "
             "not look there. Grey italic labels are special tokens.")
           if writes_words(trace, name) else
           _("Rows: the token that is looking (query). Columns: the token it looks at (key). "
             "Each row sums to 1. Grey cells are masked: the model may not look there. Grey "
             "italic labels are special tokens."))

st.subheader(_("All {n_heads} heads of layer {layer}").format(n_heads=trace.n_heads, layer=layer))
if group > 1:
    st.caption(_("Grouped-query attention: {n_kv_heads} key/value heads, each shared by "
                 "{group} consecutive query heads.").format(n_kv_heads=trace.n_kv_heads,
                                                           group=group))
chart(grid, key="heads_grid", name=(name, f"layer {layer}", "all heads"))
about = dict(model=literal(trace.model), family=trace.family, n_layers=trace.n_layers,
             n_heads=trace.n_heads, n_kv_heads=trace.n_kv_heads, positional=trace.positional,
             device=trace.device, dtype=trace.dtype)
st.caption(_("{model} · {family} · {n_layers} layers × {n_heads} heads ({n_kv_heads} K/V) · "
             "{positional} positions · ran on {device} ({dtype})").format(**about)
           if group > 1 else
           _("{model} · {family} · {n_layers} layers × {n_heads} heads · {positional} positions"
             " · ran on {device} ({dtype})").format(**about))
