"""Lesson §4.2, query, key and value: one token of the own model entering one head: its
embedding and position, the head's slices of W_Q, W_K and W_V, and its dot product with every
key ÷ √d_head, as numbers and bars."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.cache.getters import heavy_work
from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.controls import kind_selector, stepper
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.lessons.lesson import footer, header, own_model_run
from i18n import N_, _
from model.analysis import questions
from model.lessons.network import query_choices
from model.lessons.qkv import query_key_value
from viz.labels import escape
from viz.lessons.qkv import projection, query_key_bars, vector_strips

PATH = script("lesson_qkv")
ROLES = {"Q": N_("Q, the query: what this token is looking for"),
         "K": N_("K, the key: what a token offers to be found by"),
         "V": N_("V, the value: what a token hands over")}
STEPS = 3

header(PATH)
st.markdown(_(
    "Every token's vector plays three parts (§4.2: where Q, K and V come from). As a "
    "**query** it asks what it is looking for, like a shopping list; as a **key** it says "
    "what it offers, like a shop's sign; as a **value** it is the goods handed over. Three "
    "learned matrices make the three from the same vector; each head uses its own slice of "
    "them, d_head numbers wide. A query's score against a key is their dot product divided by "
    "√d_head."))

spec, device, text, loaded, trace = own_model_run("qkv")

a, b, c, d = st.columns([3, 1, 1, 3])
name = kind_selector(trace, a, key="qkv_kind")
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="qkv_layer", container=b)
head = widgets.selectbox(_("Head"), range(trace.n_heads), key="qkv_head", container=c)
choices = query_choices(trace, name)
widgets.derived((choices, name), {"qkv_query": min(2, len(choices) - 1)})
query = widgets.selectbox(_("Query token"), range(len(choices)), key="qkv_query", container=d,
                          index=min(2, len(choices) - 1), format_func=lambda i: choices[i])
with heavy_work(_("running the model with hooks")):
    seen = query_key_value(loaded, trace, name, layer, head, query)
step = stepper(_("Steps shown"), STEPS, key="qkv_step", lesson=True)
token = seen.query_tokens[query]

st.subheader(_("① The vector that enters"))
rows = [(_("word “{token}” (embedding × √{d_model})").format(token=token, d_model=seen.d_model),
         seen.word)]
if seen.position is not None:
    rows.append((_("position {position} (sinusoidal)").format(position=query), seen.position))
rows.append((_("sum: the input of layer 0"), seen.embedded))
enters_later = layer > 0 or name == "decoder.cross"
if enters_later:
    rows.append((_("what enters layer {layer} as the query").format(layer=layer), seen.x))
chart(vector_strips(rows, x_title=_("dimension (d_model = {d})").format(d=seen.d_model)),
      key="qkv_vectors", name=(name, f"layer {layer}", f"token {query}"))
st.caption(_("Each row is one vector of {d_model} numbers, red above 0 and blue below. The word "
             "and its position are added: attention alone cannot tell word order.").format(
    d_model=seen.d_model)
    + (" " + _("Deeper layers and cross-attention's queries read the vector the layers below "
               "have made of it.") if enters_later else ""))

if step >= 2:
    st.subheader(_("② Three projections, this head's slice"))
    letter = widgets.radio(_("Projection"), list(ROLES), key="qkv_proj", horizontal=True,
                           format_func=lambda r: _(ROLES[r]))
    if letter == "Q":
        vector, result, where = seen.x, seen.q, token
    else:
        j = seen.key_position
        vector = seen.keys_in[j]
        result = seen.k[j] if letter == "K" else seen.v[j]
        where = seen.key_tokens[j]
    weight, bias = {"Q": (seen.W_Q, seen.b_Q), "K": (seen.W_K, seen.b_K),
                    "V": (seen.W_V, seen.b_V)}[letter]
    first = head * seen.d_head
    chart(projection(vector, weight, bias, result, letter=letter, title=_(
        "Head {head} of layer {layer}: rows {first}–{last} of W<sub>{letter}</sub> turn “{token}” "
        "into its {small}").format(head=head, layer=layer, first=first,
                                   last=first + seen.d_head - 1, letter=letter,
                                   token=escape([where])[0], small=letter.lower())),
          key="qkv_projection", name=(name, f"layer {layer}", f"head {head}", letter))
    st.caption(_("Row i of the matrix times the input, plus bᵢ, gives number i of the result: "
                 "{d_head} numbers, this head's share of the model's {d_model}. The matrices "
                 "are the model's own trained parameters; the result is what the model "
                 "computed.").format(d_head=seen.d_head, d_model=seen.d_model)
               + (" " + _("In cross-attention the keys and values come from the encoder's "
                          "vectors: shown for “{key}”, the source word this query weighs "
                          "most.").format(key=literal(seen.key_tokens[seen.key_position]))
                  if name == "decoder.cross" and letter != "Q" else ""))

if step >= 3:
    st.subheader(_("③ The query against every key"))
    chart(query_key_bars(seen.key_tokens, seen.scaled, seen.weights, seen.allowed,
                         d_head=seen.d_head, title=_("“{token}” asks; every key answers").format(
                             token=escape([token])[0])),
          key="qkv_bars", name=(name, f"layer {layer}", f"head {head}", f"query {query}"))
    answers = pd.DataFrame({
        _("key"): seen.key_tokens, _("q · k"): seen.dots.round(4),
        _("÷ √d_head"): seen.scaled.round(4),
        _("the model's score"): trace.scores(name, layer, head)[query].round(4),
        _("weight"): seen.weights.round(4)})
    table(answers, hide_index=True)
    st.caption(_("q · k ÷ √{d_head} (√{d_head} = {root:.2f}) is exactly the score the model "
                 "computed itself; softmax turns the row into weights that sum to 1. Grey "
                 "keys are masked: the decoder may not look at words it has not written yet, "
                 "their score becomes −∞ and their weight 0.").format(
        d_head=seen.d_head, root=seen.d_head ** 0.5))
live.offer("qkv", lambda: questions.most_attended(trace, name, layer, head, query))
footer(PATH)
