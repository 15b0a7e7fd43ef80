"""Start here: what attention is, what to click, and the lesson's sentence translated live."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import get_trace
from app_pages.frame.charts import chart
from app_pages.frame.errors import explained_errors
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from i18n import _
from model.analysis.cuts import generation_step, written_words

SPEC, SENTENCE = "own-translator", "The cat sat on the mat"

st.title(_("Attention Explorer"))
st.markdown(_(
    "When a Transformer reads **The cat sat on the mat**, every word looks at the other words "
    "and decides how much of each to take in: that is **attention**. In a heatmap, each row is "
    "one word looking (the *query*), each column a word it may look at (the *key*), and a "
    "row's colours add up to 1. A model has several *heads* per layer, each looking in its own "
    "way, and several layers on top of each other."))

st.subheader(_("Try it"))
c1, c2, c3 = st.columns(3)
with c1:
    st.page_link(script("translate"), label=_("Watch a translation"), icon="🈯")
    st.caption(_("The lesson's small translator writes 猫 坐 在 垫子 上 one word at a time; "
                 "step through what it looks at while choosing each word."))
with c2:
    st.page_link(script("explore"), label=_("Explore one head"), icon="🔍")
    st.caption(_("Any model, any text: pick a layer and a head and see its heatmap, and every "
                 "head of the layer beside it."))
with c3:
    st.page_link(script("mask"), label=_("See the causal mask"), icon="🎭")
    st.caption(_("Why a decoder may not look ahead: the scores, the mask, −∞, then softmax."))
st.markdown(_(
    "On **Explore** and the pages below it, type your own sentence in the **Text** box at the "
    "top of the page (Ctrl+Enter applies it) and choose a **Model** beside it: own-translator "
    "knows a small English vocabulary; minilm and smollm2 are pretrained and read any text; "
    "own-random has the lesson's full size but random weights. Section numbers such as §3.4 "
    "refer to the lesson this app follows."))

st.subheader(_("The lesson's sentence, translated"))
_spec, device = settings()
with explained_errors(_("Could not load {model}: ").format(model=SPEC)):
    trace = get_trace(SPEC, device, SENTENCE)
last = trace.layers("decoder.cross") - 1
written = written_words(trace)
# the lesson's claim, found in this trace: the step that wrote 垫子 (else the last word)
step = generation_step(trace, written.index("垫子") + 1 if "垫子" in written else len(written) - 1,
                       last)
chart(viz.attention_heatmap(
    step.alignment, step.rows.labels, step.source_tokens, query_hover=step.rows.hover,
    special=(step.rows.special, ()), x_title=_("English word"), y_title=step.rows.title,
    title=_("Which English word each Chinese word looked at (cross-attention, last layer)")),
    key="start_alignment")
st.caption(_("While writing {word}, the decoder looks at “{source}”. The Translate page shows "
             "every step.").format(word=step.chosen,
                                   source=step.source_tokens[step.cross_peak]))
