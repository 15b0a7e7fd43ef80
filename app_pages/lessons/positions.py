"""Lesson §3.4, step 0: why attention needs positions. A sentence and its shuffled words run
through an own encoder with and without positional encoding: without it, every word keeps its
attention row, only moved; with it, the weights change."""

from __future__ import annotations

import streamlit as st

import viz.lessons.positions as figures
from app_pages.cache.getters import get_model, heavy_work
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.run import random_weights_note
from app_pages.frame.settings import DEFAULT_TEXT, settings
from app_pages.lessons.lesson import footer, header
from i18n import _
from model import UnknownWordsError
from model.errors import listed
from model.lessons.positions import MAX_WORDS, compare_orders
from viz.numbers import tiny

PATH = script("lesson_positions")
MODELS = ("own-translator", "own-random")
SEED = "pos_seed"
header(PATH)

st.markdown(_(
    "Attention compares every word with every other word at once, and nothing in that "
    "comparison says which word came first. Shuffle a sentence and see: **without** positional "
    "encoding, each word takes its attention row along, with the same weights, only reordered; "
    "**with** it, the weights themselves change, because each word's vector also says where it "
    "stands (§3.4: the seat numbers handed out before the encoder meets)."))


def _seed() -> int:
    """The current shuffle (any leftover that is not a number starts over at 0)."""
    try:
        return int(st.session_state.get(SEED, 0))
    except (TypeError, ValueError):
        return 0


def _shuffle_again() -> None:
    st.session_state[SEED] = _seed() + 1




def _describe(spec: str):
    def describe(error: ValueError) -> str:
        if isinstance(error, UnknownWordsError):
            return _("{model} does not know: {words}. Use words it knows (the Translate page "
                     "lists them), or choose own-random, which reads any words.").format(
                model=spec, words=listed(error.words, lambda word: f"“{word}”"))
        return str(error)
    return describe


if not isinstance(st.session_state.get("pos_sentence", ""), str):  # a leftover of any kind
    st.session_state["pos_sentence"] = DEFAULT_TEXT
left, right = st.columns([3, 2])
sentence = left.text_input(
    _("Sentence"), key="pos_sentence", max_chars=200,
    **({} if "pos_sentence" in st.session_state else {"value": DEFAULT_TEXT}),
    help=_("At most {most} words.").format(most=MAX_WORDS))
spec = widgets.radio(
    _("Model"), MODELS, key="pos_model", horizontal=True, container=right,
    help=_("own-translator is trained (with positions); own-random has the lesson's full size "
           "and random weights. The sidebar's model is not used here."))
_spec, device = settings()
with explained_errors(_("Could not load {model}: ").format(model=spec)):
    loaded = get_model(spec, device)
random_weights_note(spec)
with heavy_work(_("running the encoder both ways")), explained_errors(
        describe=_describe(spec)):
    lesson = compare_orders(loaded, str(sentence or ""), _seed())

shuffle, shown = st.columns([1, 3], vertical_alignment="center")
shuffle.button(_("Shuffle again"), icon=":material/shuffle:", key="pos_shuffle",
               on_click=_shuffle_again, use_container_width=True,
               help=_("Another order of the same words."))
shown.markdown(_("Shuffled: **{shuffled}**").format(
    shuffled=literal(" ".join(lesson.shuffled_words))))

n_layers, n_heads = lesson.with_positions.original.shape[:2]
c1, c2 = st.columns(2)
layer = widgets.selectbox(_("Encoder layer"), range(n_layers), key="pos_layer", container=c1)
head = widgets.selectbox(_("Head"), range(n_heads), key="pos_head", container=c2)

without, with_ = lesson.without_positions, lesson.with_positions
m1, m2 = st.columns(2)
m1.metric(_("Largest difference without positions"), tiny(without.largest),
          help=_("The largest change of any weight, in every layer and head, between the "
                 "shuffled run and the original run moved to the shuffled order."))
m2.metric(_("Largest difference with positions"), f"{with_.largest:.3f}",
          help=_("The same comparison with positional encoding switched on."))

st.subheader(_("Without positional encoding"))
chart(figures.order_panels(
    without.original[layer, head], without.shuffled[layer, head],
    without.difference[layer, head], lesson.words, lesson.shuffled_words,
    title=_("No positions · encoder layer {layer} · head {head}").format(layer=layer,
                                                                       head=head)),
    key="pos_without", name=("no positions", f"layer {layer}", f"head {head}"))
st.caption(_("③ is |② − ①|, once ①'s rows and columns are put in the shuffled order. Follow "
             "one word from ① to ②: its row holds the same weights, moved with the words, and "
             "③ stays white. In this head the largest change is {value}, rounding error of the "
             "arithmetic: for attention alone, a sentence is a bag of words.")
           .format(value=tiny(without.largest_in(layer, head))))
if len({word.lower() for word in lesson.words}) < len(lesson.words):
    st.caption(_("A word that appears twice (the own models ignore case, so The and the are one "
                 "word) gets two identical rows here: nothing tells the two apart."))

st.subheader(_("With positional encoding"))
chart(figures.order_panels(
    with_.original[layer, head], with_.shuffled[layer, head], with_.difference[layer, head],
    lesson.words, lesson.shuffled_words,
    title=(_("With positions (RoPE) · encoder layer {layer} · head {head}")
           if lesson.positional == "rope" else
           _("With positions (sinusoidal table) · encoder layer {layer} · head {head}")).format(
        layer=layer, head=head)),
    key="pos_with", name=("positions", f"layer {layer}", f"head {head}"))
st.caption(_("Now each word's vector also carries its seat number, so the same words in "
             "another order meet differently: in this head a weight changes by up to {value:.3f}."
             ).format(value=with_.largest_in(layer, head)))

with st.expander(_("How the positions were switched off")):
    st.markdown(_(
        "The same network runs twice. With positions, the encoder reads each word's embedding "
        "(× √d_model) plus its row of the sinusoidal table; without, the embedding alone (a "
        "RoPE model would skip the rotation of Q and K instead). Nothing else changes: the same "
        "weights, the same layers. own-translator was trained with positions, so without them "
        "its patterns lose their meaning; the point here is the symmetry. It holds for the "
        "encoder, where every word sees every word; a decoder's causal mask already depends "
        "on the order."))
footer(PATH)
