"""Lesson §4.7, the three kinds of attention: encoder self-attention, decoder masked
self-attention and cross-attention of the own translator side by side for one sentence and its
translation, and the lesson's table answered from the live trace."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.cache.getters import get_model, get_trace
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import kind_name, settings
from app_pages.lessons.lesson import DEFAULT_SENTENCE, MAX_SENTENCE, footer, header
from i18n import N_, _
from model.lessons.kinds import KINDS, three_kinds
from viz.lessons.kinds import kind_panel

PATH = script("lesson_kinds")
MODEL = "own-translator"
TEXT = "kd_text"
# Who asks and whose dictionary is read, by the kind's (query axis, key axis, keys from the
# encoder's output): the table's words and the heatmaps' axis titles.
ASKS = {"source": N_("each source word"), "target": N_("each word being written")}
DICTIONARY = {("source", False): N_("the source itself"),
              ("target", False): N_("what was written itself"),
              ("source", True): N_("the encoder's output")}
ASKS_AXIS = {"source": N_("Q: source words"), "target": N_("Q: words being written")}
DICTIONARY_AXIS = {("source", False): N_("K/V: source words"),
                   ("target", False): N_("K/V: words written"),
                   ("source", True): N_("K/V: encoder output")}
USED_FOR = {"encoder.self": N_("understanding the source"),
            "decoder.self": N_("modelling what was written so far"),
            "decoder.cross": N_("bringing the source into the writing")}


def _looks_ahead(view) -> str:
    """The table's "may it look ahead?" cell, from the trace."""
    if view.looks_ahead is None:
        return _("— (queries and keys are two different sequences)") if \
            view.query_axis != view.key_axis else _("— (one token: nothing lies ahead)")
    if view.looks_ahead:
        return _("✅ yes, both ways: weights above the diagonal are not 0")
    return _("❌ no (masked): every weight above the diagonal is exactly 0")


header(PATH)
st.markdown(_(
    "A Transformer translator holds three attention modules, and one sentence tells them "
    "apart (lesson §4.7): **who asks** (the queries, Q), **whose dictionary it looks up** "
    "(the keys and values, K/V) and **whether it may look ahead**. Below, the three run in "
    "the own translator on your sentence and its own translation; the table's answers are "
    "read from this run."))
if not isinstance(st.session_state.get(TEXT, ""), str):
    st.session_state[TEXT] = DEFAULT_SENTENCE
st.session_state.setdefault(TEXT, DEFAULT_SENTENCE)
text = st.text_input(_("Sentence (English words)"), key=TEXT, max_chars=MAX_SENTENCE,
                     help=_("own-translator reads a small English vocabulary (the Translate "
                            "page lists it)."))
_spec, device = settings()
with explained_errors(_("Could not load {model}: ").format(model=MODEL)):
    get_model(MODEL, device)
if not text.strip():
    st.info(_("Type a sentence to run the model on."))
    st.stop()
with explained_errors(describe=describe_error(MODEL)):
    trace = get_trace(MODEL, device, text)
n_layers = min(trace.layers(name) for name in KINDS)
left, right = st.columns(2)
layer = widgets.selectbox(_("Layer"), range(n_layers), key="kd_layer", index=n_layers - 1,
                          container=left)
head = widgets.selectbox(_("Head"), range(trace.n_heads), key="kd_head", container=right)
views = three_kinds(trace, layer, head)
st.caption(literal(_("{model} translated “{source}” as “{target}”.").format(
    model=MODEL, source=" ".join(trace.source_tokens),
    target=" ".join(str(t) for t in trace.target_tokens[1:]))))

for column, view in zip(st.columns(3), views):
    where = (view.key_axis, view.from_encoder)
    with column:
        st.markdown("#### " + kind_name(view.name))
        chart(kind_panel(view.weights, view.query_labels, view.key_labels,
                         allowed=view.allowed, asks=_(ASKS_AXIS[view.query_axis]),
                         dictionary=_(DICTIONARY_AXIS[where]),
                         query_hover=view.query_hover, special=view.special),
              key=f"kd_{view.name}", share=1 / 3,
              name=(view.name, f"layer {layer}", f"head {head}"))

st.subheader(_("The lesson's table, answered by this run"))
rows = [(kind_name(view.name), _(ASKS[view.query_axis]),
         _(DICTIONARY[(view.key_axis, view.from_encoder)]),
         f"{view.shape[0]} × {view.shape[1]}", _looks_ahead(view),
         _(USED_FOR[view.name])) for view in views]
table(pd.DataFrame(rows, columns=[_("kind"), _("who asks (Q)"), _("whose dictionary (K/V)"),
                                  _("shape [queries × keys]"), _("may it look ahead?"),
                                  _("used for")]), hide_index=True)
st.caption(_("Who asks and whose dictionary come from the run's token axes; the shapes are the "
             "weights' own; “may it look ahead” checks every weight above the diagonal in all "
             "{layers} layers and {heads} heads."
             ).format(layers=n_layers, heads=trace.n_heads))
st.markdown(_(
    "**Cross-attention is the subtlest design here.** It splits *understanding* and "
    "*generating* into two separate stages joined by one attention layer. That pattern "
    "became the general interface for **conditioning**: `Stable Diffusion` brings in the text "
    "prompt with it, multimodal models bring in image features. Whenever B is generated "
    "given A, cross-attention can do it."))
footer(PATH)
