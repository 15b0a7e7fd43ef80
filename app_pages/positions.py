"""Positional encodings: the seed's sinusoidal table, RoPE, and what the loaded model uses."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages import widgets
from app_pages.common import chart, explained_errors, literal, random_weights_note, settings
from model.analysis.positions import (
    dot_similarity,
    model_positions,
    rope_offset_scores,
    rope_thetas,
    sinusoidal,
)

st.title("Positional encodings")
st.markdown("Attention itself ignores order (lesson §3.4, step 0: positional encoding): "
            "shuffle the words and every pair still meets. Positions must be put in by hand.")

st.header("Sinusoidal: a watch with fast and slow hands")
c1, c2 = st.columns(2)
n_positions = widgets.slider("Positions", 8, 256, 64, key="pe_positions", container=c1)
d_model = widgets.select_slider("d_model", [16, 32, 64, 128, 256, 512], 128, key="pe_d_model",
                                container=c2)
table = sinusoidal(n_positions, d_model)
st.latex(r"PE_{(pos,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\quad "
         r"PE_{(pos,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)")
chart(viz.sinusoidal_heatmap(table), key="pe_table")
dims = [0, 2, d_model // 4, d_model // 2, d_model - 2]
chart(viz.clock_hands(table, dims), key="pe_waves")
chart(viz.similarity_matrix(dot_similarity(table), "PE(p) · PE(q): nearby positions "
                                      "look alike", "dot product"), key="pe_similarity")

st.header("RoPE: rotate Q and K instead")
st.markdown("Each pair of dimensions of q and k turns by an angle proportional to the position. "
            "After both turn, q·k depends only on how far apart they are.")
thetas = rope_thetas(64)[[0, 4, 12, 31]]
chart(viz.rope_circles(thetas, 16), key="rope_circles")
chart(viz.rope_offsets(rope_offset_scores(24)), key="rope_offsets")

st.header("The loaded model")
spec, device = settings()
if spec:
    from app_pages.cache import get_model

    with explained_errors(f"Could not load {spec[:80]}: "):
        info = model_positions(get_model(spec, device))
    random_weights_note(spec)
    st.write(f"**{literal(spec)}** uses **{info['scheme']}** positions.")
    if "periods" in info:
        chart(viz.rope_periods(
            info["periods"], f"RoPE with θ base {info['theta']:g}, d_head {info['d_head']}: "
                             "positions per turn of each pair"), key="model_periods")
    elif "similarity" in info:
        chart(viz.similarity_matrix(
            info["similarity"], f"Learned position embeddings ({info['parameter']}): cosine "
                                "similarity", "cosine"), key="model_similarity")
    elif "table" in info:
        st.caption("The own models add the lesson's sinusoidal table shown above.")
    else:
        st.caption("Its positions enter through a relative bias inside attention (T5): there is "
                   "no table to draw.")
