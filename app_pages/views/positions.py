"""Positional encodings: the seed's sinusoidal table, RoPE, and what the loaded model uses."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import get_model
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.run import random_weights_note
from app_pages.frame.settings import SCHEME_NAMES, named, settings
from i18n import _
from model.analysis.positions import (
    clock_dims,
    dot_similarity,
    model_positions,
    rope_offset_scores,
    rope_thetas_shown,
    sinusoidal,
)
from model.meta import RECURRENCE

# The positional schemes a model reports (``PositionInfo.scheme``), as the page names them.

st.title(_("Positional encodings"))
st.markdown(_("Attention itself ignores order (lesson §3.4, step 0: positional encoding): "
              "shuffle the words and every pair still meets. Positions must be put in by "
              "hand."))

st.header(_("Sinusoidal: a watch with fast and slow hands"))
c1, c2 = st.columns(2)
n_positions = widgets.slider(_("Number of positions"), 8, 256, 64, key="pe_positions", container=c1)
d_model = widgets.select_slider("d_model", [16, 32, 64, 128, 256, 512], 128, key="pe_d_model",
                                container=c2)
table = sinusoidal(n_positions, d_model)
st.latex(r"PE_{(pos,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\quad "
         r"PE_{(pos,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)")
chart(viz.sinusoidal_heatmap(table), key="pe_table")
chart(viz.clock_hands(table, clock_dims(d_model)), key="pe_waves")
chart(viz.similarity_matrix(dot_similarity(table), _("PE(p) · PE(q): nearby positions look "
                                                      "alike"), _("dot product")),
      key="pe_similarity")

st.header(_("RoPE: rotate Q and K instead"))
st.markdown(_("Each pair of dimensions of q and k turns by an angle proportional to the "
              "position. After both turn, q·k depends only on how far apart they are."))
chart(viz.rope_circles(rope_thetas_shown(), 16), key="rope_circles")
chart(viz.rope_offsets(rope_offset_scores(24)), key="rope_offsets")

st.header(_("The loaded model"))
spec, device = settings()
if spec:
    with explained_errors(_("Could not load {model}: ").format(model=spec[:80])):
        info = model_positions(get_model(spec, device))
    random_weights_note(spec)
    scheme = info["scheme"]
    if scheme == RECURRENCE:
        st.write(_("**{model}** has no position encoding: a recurrent model reads the words one "
                   "at a time, in order, so their order is already in its state. That serial "
                   "reading is what lesson 3.6 measures against the Transformer.").format(
            model=literal(spec)))
    else:
        st.write(_("**{model}** uses **{scheme}** positions.").format(
            model=literal(spec), scheme=named(SCHEME_NAMES, scheme)))
    if "periods" in info:
        chart(viz.rope_periods(
            info["periods"], _("RoPE with θ base {theta:g}, d_head {d_head}: positions per turn "
                               "of each pair").format(theta=info["theta"], d_head=info["d_head"])),
            key="model_periods")
    elif "similarity" in info:
        chart(viz.similarity_matrix(
            info["similarity"], _("Learned position embeddings ({parameter}): cosine "
                                  "similarity").format(parameter=info["parameter"]),
            _("cosine")), key="model_similarity")
    elif "table" in info:
        st.caption(_("The own models add the lesson's sinusoidal table shown above."))
    elif scheme != RECURRENCE:
        st.caption(_("Its positions enter through a relative bias inside attention (T5): there "
                     "is no table to draw."))
