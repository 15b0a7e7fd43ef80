"""Lesson §4.6, multi-head attention: one layer's real tensors with their real shapes, from
(B, L, d_model) through the split into h heads of d_head and each head's pattern to the
concatenation and W_O."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from app_pages.cache.getters import heavy_work
from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.controls import kind_selector, stepper
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import presenting
from app_pages.lessons.lesson import footer, header, own_model_run
from i18n import _
from model.analysis import questions
from model.analysis.cuts import query_rows
from model.lessons.multihead import heads_of_layer
from model.lessons.network import query_choices
from viz.labels import escape
from viz.lessons.multihead import HEAD_STAGES, concat_bars, heads_flow

PATH = script("lesson_multihead")
STEPS = 3
STAGES_SHOWN = {1: 2, 2: 3, 3: len(HEAD_STAGES)}  # step -> stages of the flow drawn

header(PATH)
st.markdown(_(
    "One head can follow one kind of relation at a time: who “it” refers to, which words a "
    "verb links, the word just before. Multi-head attention cuts the model's width d_model "
    "into h slices of d_head = d_model / h, lets each head attend in its own slice, then puts "
    "the heads' results side by side and mixes them with one more matrix, $W_O$ (§4.6: why "
    "several heads). The heads together cost about what one wide head would."))

spec, device, text, loaded, trace = own_model_run(
    "mh", help=_("own-random has the lesson's sizes, (B, L, 512) → (B, 8, L, 64)."))

a, b, c = st.columns([3, 1, 3])
name = kind_selector(trace, a, key="mh_kind")
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="mh_layer", container=b)
choices = query_choices(trace, name)
widgets.derived((choices, name), {"mh_query": min(2, len(choices) - 1)})
query = widgets.selectbox(_("Token (for the concatenation)"), range(len(choices)),
                          key="mh_query", container=c, index=min(2, len(choices) - 1),
                          format_func=lambda i: choices[i])
with heavy_work(_("running the model with hooks")):
    heads = heads_of_layer(loaded, trace, name, layer)
step = stepper(_("Steps shown"), STEPS, key="mh_step", lesson=True)

st.subheader(_("① Split into {heads} heads of {d_head}").format(heads=heads.n_heads,
                                                              d_head=heads.d_head))
chart(heads_flow(heads.shapes, heads.n_heads, shown=STAGES_SHOWN[step],
                 font_size=18 if presenting() else 14),
      key="mh_flow", name=(name, f"layer {layer}", "shapes"))
stages = [(_(label).replace("<sub>", "_").replace("</sub>", ""), symbolic.replace(
    "<sub>", "_").replace("</sub>", ""), str(heads.shapes[stage]))
          for stage, label, symbolic in HEAD_STAGES[:STAGES_SHOWN[step]]]
table(pd.DataFrame(stages, columns=[_("stage"), _("as the lesson writes it"),
                                           _("this run")]), hide_index=True)
st.caption(_("B = 1 sentence, L = its {n} tokens, d_model = {d_model} = {heads} heads × "
             "{d_head}. The shapes are read from the real tensors of {model}'s layer {layer} "
             "during one forward pass.").format(
    n=len(heads.query_tokens), d_model=heads.d_model, heads=heads.n_heads, d_head=heads.d_head,
    model=literal(spec), layer=layer))

if step >= 2:
    st.subheader(_("② Each head's pattern"))
    rows = query_rows(trace, name)
    chart(viz.heads_grid(heads.patterns, rows.labels, heads.key_tokens, allowed=heads.allowed,
                         cols=4, query_hover=rows.hover),
          key="mh_patterns", name=(name, f"layer {layer}", "heads"))
    st.caption(_("Every head of layer {layer} attends on its own, each in its own {d_head} "
                 "numbers: the same sentence, different patterns.").format(
        layer=layer, d_head=heads.d_head)
        + (" " + _("own-random's weights were never trained: its heads differ by chance, not "
                   "by what they learned.") if spec == "own-random" else ""))

if step >= 3:
    st.subheader(_("③ Side by side, then $W_O$"))
    chart(concat_bars(heads.concat[query], heads.output[query], heads.n_heads,
                      title=_("Token {token}").format(token=escape([choices[query]])[0])),
          key="mh_concat", name=(name, f"layer {layer}", f"token {query}"))
    st.caption(_("Each head's output for this token is {d_head} numbers (its weights times its "
                 "values); the {heads} of them side by side make {d_model} numbers again, "
                 "exactly what $W_O$ receives in the model. $W_O$ ({d_model} × {d_model}) mixes "
                 "them: every output number reads every head.").format(
        d_head=heads.d_head, heads=heads.n_heads, d_model=heads.d_model))
live.offer("multihead", lambda: questions.sharpest_link(trace, name, layer, query),
           lambda: questions.most_attended(trace, name, layer, None, query))
footer(PATH)
