"""Lesson §3.2–3.3, the architecture: the encoder-decoder as a clickable diagram (each block
opens the view that shows it), and around each sublayer of a chosen layer the sizes of x,
sublayer(x), x + sublayer(x) and LayerNorm's output, measured in the own model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.cache.getters import heavy_work
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import presenting
from app_pages.lessons.lesson import footer, header, own_model_run
from i18n import N_, _
from model.lessons.architecture import SUBLAYERS, residual_streams, stacks_of
from model.lessons.network import query_choices
from viz.lessons.architecture import SIZE_PARTS, architecture_diagram, clicked_block, residual_sizes

PATH = script("lesson_architecture")
GO = "_arch_go"  # the page a click chose, switched to at the start of the next run
STACK_NAMES = {"encoder": N_("encoder"), "decoder": N_("decoder")}
SUBLAYER_NAMES = {("encoder", "self_attn"): N_("self-attention"),
                  ("decoder", "self_attn"): N_("masked self-attention"),
                  ("decoder", "cross_attn"): N_("cross-attention"),
                  ("encoder", "ffn"): N_("FFN"), ("decoder", "ffn"): N_("FFN")}
# Each sublayer's block and the Add & Norm block after it, in the diagram.
DIAGRAM_BLOCKS = {("encoder", "self_attn"): ("enc_self", "enc_norm1"),
                  ("encoder", "ffn"): ("enc_ffn", "enc_norm2"),
                  ("decoder", "self_attn"): ("dec_self", "dec_norm1"),
                  ("decoder", "cross_attn"): ("dec_cross", "dec_norm2"),
                  ("decoder", "ffn"): ("dec_ffn", "dec_norm3")}
NORM_BLOCKS = {norm: key for key, (_block, norm) in DIAGRAM_BLOCKS.items()}
# What a click on a block opens (the view's title, as the navigation names it).
VIEWS = {"src_embed": N_("Positions"), "tgt_embed": N_("Positions"),
         "enc_self": N_("Explore"), "enc_stack": N_("Model view"),
         "dec_stack": N_("Model view"), "dec_self": N_("Causal mask"),
         "dec_cross": N_("Translate"), "output": N_("Translate"),
         "enc_ffn": N_("Shapes and costs"), "dec_ffn": N_("Shapes and costs"),
         **{norm: N_("the sizes below") for norm in NORM_BLOCKS}}

PAGES = {"src_embed": "positions", "tgt_embed": "positions", "enc_self": "explore",
         "enc_stack": "model_view", "dec_stack": "model_view", "dec_self": "mask",
         "dec_cross": "translate", "output": "translate", "enc_ffn": "shapes",
         "dec_ffn": "shapes"}  # the page each block opens (own-random's cross-attention: explore)

header(PATH)
chosen_page = st.session_state.pop(GO, None)  # a click on the diagram chose a view
if chosen_page in {script(page) for page in (*PAGES.values(), "explore")}:
    st.switch_page(chosen_page)

st.markdown(_(
    "The Transformer of the lesson is a building of two floors. Downstairs, the **encoder** "
    "reads the whole source sentence at once and keeps one vector per word (nothing is "
    "squeezed into a single vector). Upstairs, the **decoder** writes the translation one word "
    "at a time: it looks at the words it has written (masked, never ahead) and, in every "
    "layer, at all of the encoder's vectors (cross-attention)."))
st.markdown(_(
    "Inside every layer each sublayer is wrapped the same way (§3.3: the discussion in each "
    "room): `x_out = LayerNorm(x + sublayer(x))`. The residual **x + …** keeps what came in, "
    "whatever the sublayer adds; LayerNorm brings the sum back to a steady size."))

spec, device, text, loaded, trace = own_model_run("arch")
cfg = loaded.config

st.subheader(_("The building (click a block)"))
diagram_slot = st.container()  # drawn once the sizes below are chosen (it shows them)
links_slot = st.container()

st.subheader(_("Residual + LayerNorm, measured"))
stacks = stacks_of(trace)
a, b, c, d = st.columns([1, 1, 2, 2])
stack = widgets.selectbox(_("Stack"), stacks, key="arch_stack", container=a,
                          format_func=lambda s: _(STACK_NAMES[s]))
n_layers = trace.layers(f"{stack}.self")
layer = widgets.selectbox(_("Layer"), range(n_layers), key="arch_layer", container=b)
choices = query_choices(trace, f"{stack}.self")
widgets.derived((choices, stack), {"arch_token": min(2, len(choices) - 1)})
token = widgets.selectbox(_("Token"), range(len(choices)), key="arch_token", container=c,
                          index=min(2, len(choices) - 1), format_func=lambda i: choices[i])
sublayers = [name for name, _residual in SUBLAYERS[stack]
             if name != "cross_attn" or "decoder.cross" in trace.names]
sublayer = widgets.radio(_("Sublayer"), sublayers, key="arch_sublayer", container=d,
                         horizontal=True, format_func=lambda s: _(SUBLAYER_NAMES[stack, s]))


def _go(block: str) -> None:
    """Open the view of ``block``: the same model and sentence, the layer chosen here."""
    if block in NORM_BLOCKS:  # an Add & Norm block chooses the sizes shown below
        stack_, sublayer_ = NORM_BLOCKS[block]
        st.session_state.update(arch_stack=stack_, arch_sublayer=sublayer_)
        return
    st.session_state.update(model_choice=spec, text=text)
    n_encoder, n_decoder = cfg.n_encoder_layers, cfg.n_decoder_layers
    enc_layer, dec_layer = min(layer, n_encoder - 1), min(layer, n_decoder - 1)
    page = PAGES[block]
    if block == "enc_self":
        st.session_state["open_head"] = ("encoder.self", enc_layer, 0)
    elif block in ("enc_stack", "dec_stack"):
        st.session_state["mv_kind"] = "encoder.self" if block == "enc_stack" else "decoder.cross"
    elif block == "dec_self":
        st.session_state.update(mask_kind="decoder.self", mask_layer=dec_layer)
    elif block in ("dec_cross", "output"):
        if spec == "own-translator":  # Translate always runs own-translator
            st.session_state.update(translate_text=text, dec_layer=dec_layer)
        elif block == "dec_cross":  # own-random: its cross-attention in Explore
            page = "explore"
            st.session_state["open_head"] = ("decoder.cross", dec_layer, 0)
    st.session_state[GO] = script(page)


def _clicked() -> None:
    block = clicked_block(st.session_state.get("arch_diagram"))
    if block is not None:
        _go(block)


words = " ".join(str(t) for t in trace.axes(f"{stacks[0]}.self")[0])
written = " ".join(str(t) for t in trace.axes("decoder.self")[0]) \
    if "decoder.self" in trace.names else ""
with diagram_slot:
    chart(architecture_diagram(
        cfg.n_encoder_layers, cfg.n_decoder_layers, d_model=cfg.d_model, n_heads=cfg.n_heads,
        d_ff=cfg.d_ff, selected=DIAGRAM_BLOCKS[stack, sublayer],
        targets={block: _(view) for block, view in VIEWS.items()}, source=words, target=written,
        font_size=18 if presenting() else 13),
        key="arch_diagram", name=("architecture",), on_select=_clicked, selection_mode="points")
links_slot.caption(_("Click a block to open the view that shows it, with this model and "
                     "sentence; the Residual + LayerNorm blocks choose the sizes shown below. "
                     "The same views as links:"))
links = links_slot.columns(2)
for column, (page, label, icon) in zip(links * 3, (
        (script("positions"), N_("Positions: the positional encoding"), "🕰️"),
        (script("explore"), N_("Explore: encoder self-attention"), "🔍"),
        (script("mask"), N_("Causal mask: masked self-attention"), "🎭"),
        (script("translate"), N_("Translate: cross-attention, the next word"), "🈯"),
        (script("shapes"), N_("Shapes and costs: the FFN"), "📐"),
        (script("model_view"), N_("Model view: every layer and head"), "🧱"))):
    column.page_link(page, label=_(label), icon=icon)

with heavy_work(_("running the model with hooks")):
    streams = residual_streams(loaded, trace)
measured = streams.layers[stack, layer]
sizes = measured.sizes(token)
names = [_(SUBLAYER_NAMES[stack, r.sublayer]) for r in measured.residuals]
chosen = sublayers.index(sublayer)
where = _("{stack} layer {layer}, token {token}").format(
    stack=_(STACK_NAMES[stack]), layer=layer, token=choices[token])
chart(residual_sizes(sizes, names, d_model=streams.d_model, chosen=chosen,
                     title=_("Sizes around each sublayer · {where}").format(where=where)),
      key="arch_sizes", name=(stack, f"layer {layer}", f"token {token}"))
x, update, total, normed = sizes[chosen]
st.markdown(_("**{sublayer}** at {where}: the vector that comes in has size **{x:.2f}**; the "
              "sublayer adds one of size **{update:.2f}**; their sum has size **{total:.2f}**; "
              "LayerNorm brings it to **{normed:.2f}**, which goes on to the next sublayer.")
            .format(sublayer=names[chosen], where=literal(where), x=x, update=update,
                    total=total, normed=normed))
table(pd.DataFrame(sizes.round(3), index=names, columns=[_(p) for p in SIZE_PARTS]))
st.caption(_("Sizes are L2 norms of the real vectors, read with hooks on the model's own "
             "modules during one forward pass. LayerNorm gives every vector mean 0 and "
             "variance 1 (a size of √d_model, the dotted line), then its learned scale and "
             "shift: its output keeps a steady size however large the sum was, so stacked "
             "layers cannot blow the numbers up, while the residual keeps a straight path for "
             "what came in."))

ffn_in, ffn_hidden, ffn_out = measured.ffn_shapes
st.markdown(_("**The FFN of this layer**, measured: {shape_in} → {shape_hidden} → {shape_out}, "
              "that is d_model {d_model} → d_ff {d_ff} → d_model {d_model}, applied to every "
              "token on its own.").format(
    shape_in=ffn_in, shape_hidden=ffn_hidden, shape_out=ffn_out, d_model=streams.d_model,
    d_ff=streams.d_ff))
if spec != "own-random":
    st.caption(_("The lesson's model is 512 → 2048 → 512 (§3.5: following the shapes); choose "
                 "own-random above to measure those sizes."))
footer(PATH)
