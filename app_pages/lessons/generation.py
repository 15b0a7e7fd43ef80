"""Lesson §3.4 step 3 and §3.8: a model writes one token at a time; each step adds one
attention row and one key and value per layer to the KV cache, which is measured as it grows."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

import viz
from app_pages.cache.getters import get_generation, get_model
from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.controls import stepper
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from app_pages.lessons.lesson import footer, header
from i18n import _
from model.analysis import questions
from model.lessons.generation import kv_growth, next_words, pattern_at_step
from viz.lessons.generation import cache_bytes, cache_grid, growing_pattern
from viz.numbers import byte_size

PATH = script("lesson_generation")
MODELS = ("own-translator", "smollm2")
TEXTS = {"own-translator": "The cat sat on the mat", "smollm2": "The cat sat on the"}
MAX_CHARS = 300  # a short sentence or prompt: the lesson draws every token
NEW_TOKENS = (2, 16, 8)  # smollm2: fewest, most and default tokens written


_size = partial(byte_size, largest="MB")  # the cache of these models: B, KB or MB

def _shown(token: str) -> str:
    """A token for bold text: without the spaces around it (``**␣cat**`` is not bold)."""
    return token.strip() or token


header(PATH)
st.markdown(_("A decoder writes one token per step: it reads what it has so far, turns its "
              "last row into next-word probabilities and keeps the most probable word "
              "(greedy decoding). Each step adds **one attention row** to the lower-triangular "
              "pattern of masked self-attention, and every layer keeps the keys and values it "
              "computed, the **KV cache**, so that the next step projects only the newest "
              "token instead of the whole text again (lesson §3.4, step 3: guessing the next "
              "word)."))

RESET = "gen_reset"  # set when the model changes: its step, layer and heads start afresh


def _new_model() -> None:
    st.session_state[RESET] = True


spec = widgets.radio(_("Model"), MODELS, key="gen_model", horizontal=True, on_change=_new_model,
                     help=_("own-translator opens at once; smollm2 is loaded the first time it "
                            "is chosen (on a new server about 30 s, then a few seconds)."))
_sidebar_spec, device = settings()
text_key = f"gen_text_{spec}"
if not isinstance(st.session_state.get(text_key, ""), str):
    st.session_state[text_key] = TEXTS[spec]
st.session_state.setdefault(text_key, TEXTS[spec])
if spec == "smollm2":
    left, right = st.columns([3, 1])
    text = left.text_input(_("Prompt"), key=text_key, max_chars=MAX_CHARS,
                           help=_("smollm2 continues this text; any language works."))
    new_tokens = widgets.slider(_("Tokens to write"), NEW_TOKENS[0], NEW_TOKENS[1],
                                NEW_TOKENS[2], key="gen_new_tokens", container=right)
    st.caption(_("smollm2: 30 layers, 9 query heads sharing 3 key/value heads "
                 "(grouped-query attention)."))
else:
    text = st.text_input(_("English sentence"), key=text_key, max_chars=MAX_CHARS,
                         help=_("own-translator reads a small English vocabulary (the Translate "
                                "page lists it) and writes Chinese until its end token."))
    new_tokens = None
if not text.strip():
    st.info(_("Type a sentence to generate from."))
    st.stop()

with explained_errors(_("Could not load {model}: ").format(model=spec)):
    get_model(spec, device)
with explained_errors(describe=describe_error(spec)):
    generation = get_generation(spec, device, text, new_tokens)
dims = generation.trace.dims
growth = kv_growth(generation, dims)
n_steps = len(generation.steps)
written = [s.token for s in generation.steps]
joiner = "" if spec == "smollm2" else " "  # smollm2's tokens carry their spaces
st.markdown(_("**Read:** {prompt}").format(prompt=literal(joiner.join(
    generation.prompt_tokens))))
written_line = st.empty()  # up to the step only: a later step's token is not given away

if st.session_state.pop(RESET, False):
    # Written, not forgotten, so that the browser shows the new model's defaults too.
    st.session_state.update(gen_step=1, gen_layer=dims.n_decoder_layers - 1,
                            gen_head="average")
step = stepper(_("Generation step"), n_steps, key="gen_step", lesson=True,
               help=_("At step t the model has written t − 1 tokens and chooses token t."))
written_line.markdown(_("**Written, one step each:** {words}").format(
    words=" · ".join([*(literal(_shown(w)) for w in written[:step]),
                      *(["…"] if step < len(written) else [])])))
pattern_layer = dims.n_decoder_layers - 1
left, right = st.columns(2)
layer = widgets.selectbox(_("Decoder layer"), range(dims.n_decoder_layers), key="gen_layer",
                          index=pattern_layer, container=left)
head = widgets.selectbox(_("Heads"), ["average", *range(dims.n_heads)], key="gen_head",
                         container=right,
                         format_func=lambda h: _("average of all heads") if h == "average"
                         else _("head {head}").format(head=h))
with explained_errors():
    now = pattern_at_step(generation, step, layer, None if head == "average" else head)
before = now.first_new
if step == 1 and now.rows > 1:
    st.markdown(_("**Step 1** reads the whole prompt at once ({count} tokens: {count} rows and "
                  "their keys and values in every layer) and writes **{word}** "
                  "(p = {p:.2f}).").format(count=now.rows, word=literal(_shown(now.written)),
                                           p=now.probability))
else:
    st.markdown(_("**Step {step}** reads **{read}**: one new row, one new key and value per "
                  "layer, then writes **{word}** (p = {p:.2f}).").format(
        step=step, read=literal(_shown(now.read)), word=literal(_shown(now.written)),
        p=now.probability))


def _so_far(labels, shown: int) -> list[str]:
    """``labels`` with those past the first ``shown`` as "?": what a later step reads or
    writes is not given away before that step."""
    return [label if i < shown else "?" for i, label in enumerate(labels)]


col_pattern, col_next = st.columns([3, 2])
with col_pattern:
    chart(growing_pattern(
        now.weights, now.allowed, _so_far(now.row_labels, now.rows),
        _so_far(now.key_labels, now.rows), first_new=now.first_new, rows=now.rows,
        row_hover=_so_far(now.row_hover, now.rows), y_title=now.row_title,
        title=_("Masked self-attention after step {step} (layer {layer})").format(
            step=step, layer=layer)), key="gen_pattern", share=0.6,
        name=("self-attention", f"step{step}", f"layer{layer}"))
    st.caption(_("The outlined rows are the ones this step computed; the faint rows come in "
                 "later steps. Earlier rows never change: a row only reads keys to its left, "
                 "which is why the keys and values can be kept."))
with col_next:
    words, probabilities, chosen = next_words(generation, step)
    chart(viz.distribution_bars(
        probabilities, words, highlight=chosen,
        title=_("Next-word probabilities at step {step}").format(step=step),
        value_name=_("probability")), key="gen_next", share=0.4,
        name=("next-word", f"step{step}"))
    st.caption(_("The most probable words of this step; greedy decoding keeps the most "
                 "probable one (orange)."))

st.subheader(_("The KV cache of every layer"))
col_grid, col_bytes = st.columns(2)
with col_grid:
    chart(cache_grid(growth.layers, _so_far(now.key_labels, now.rows), before=before,
                     now=now.rows,
                     bytes_per_cell=growth.per_token // growth.layers,
                     title=_("Keys and values cached after step {step}").format(step=step)),
          key="gen_cache_grid", share=0.5, name=("kv-cache", f"step{step}"))
with col_bytes:
    chart(cache_bytes([f"{i}: {w}" for i, w in enumerate(_so_far(written, step), start=1)],
                      growth.total,
                      growth.formula, growth.without_gqa, step=step, cross=growth.cross,
                      title=_("KV cache in bytes, step by step")),
          key="gen_cache_bytes", share=0.5, name=("kv-cache-bytes",))

index = step - 1
tokens_now = int(growth.tokens[index])
c1, c2, c3 = st.columns(3)
c1.metric(_("KV cache after step {step}").format(step=step), _size(growth.total[index]),
          _("+{added} per token").format(added=_size(growth.per_token)), delta_color="off",
          delta_arrow="off")
if growth.group > 1:
    c2.metric(_("without grouped-query attention"), _size(growth.without_gqa[index]),
              _("{times}× as much").format(times=growth.group), delta_color="off",
              delta_arrow="off")
else:
    c2.metric(_("without grouped-query attention"), _size(growth.without_gqa[index]),
              _("the same: no GQA"), delta_color="off", delta_arrow="off")
if growth.cross:
    c3.metric(_("cross-attention K/V"), _size(growth.cross), _("computed once, never grows"),
              delta_color="off", delta_arrow="off")
else:
    c3.metric(_("cross-attention K/V"), _("none"))
st.markdown(_("**The formula:** 2 (K and V) × {layers} layers × {kv_heads} K/V heads × "
              "{d_head} (d_head) × {tokens} tokens × {size} bytes = **{formula:,} bytes**; the "
              "cache's tensors hold **{measured:,} bytes**.").format(
    layers=growth.layers, kv_heads=growth.kv_heads, d_head=growth.d_head, tokens=tokens_now,
    size=growth.bytes_per_element, formula=int(growth.formula[index]),
    measured=int(growth.total[index])))
if growth.group > 1:
    st.caption(_("Grouped-query attention (lesson §3.8, the cost of the KV cache): {model}'s "
                 "{n_heads} query heads share {kv_heads} key/value heads, {group} each, so its "
                 "cache is {group} times smaller than with one K/V head per query "
                 "head.").format(model=spec, n_heads=growth.n_heads, kv_heads=growth.kv_heads,
                                 group=growth.group))
else:
    st.caption(_("{model} gives every query head its own keys and values ({n_heads} K/V heads "
                 "per layer): no grouped-query attention, so both figures are the "
                 "same.").format(model=spec, n_heads=growth.n_heads))
if growth.cross:
    st.caption(_("An encoder-decoder caches twice. Decoder self-attention grows by one token "
                 "per step (above). Cross-attention reads the encoder's output: its keys and "
                 "values ({source} source tokens × {layers} layers = {size:,} bytes) are "
                 "computed once, before step 1, and every step reuses them; they are counted "
                 "separately and do not grow.").format(
        source=len(generation.prompt_tokens), layers=growth.layers, size=growth.cross))

with st.expander(_("Every step in numbers")):
    table(pd.DataFrame({
        _("step"): range(1, n_steps + 1), _("written"): _so_far(written, step),
        _("tokens cached"): growth.tokens, _("KV cache (bytes, measured)"): growth.total,
        _("formula (bytes)"): growth.formula,
        _("without GQA (bytes)"): growth.without_gqa}), hide_index=True)
live.offer("generation", lambda: questions.kv_cache_megabytes(generation.trace,
                                                           growth.bytes_per_element))
footer(PATH)
