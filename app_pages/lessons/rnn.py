"""Lesson §3.6 (with §3.1's old way): RNN against Transformer, every number measured on the
project's own models trained on the same corpus: a plain RNN and a GRU that squeeze the
sentence into one vector, Bahdanau's GRU with additive attention, and the Transformer."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages.cache.getters import (
    get_model,
    get_recurrent,
    get_rnn_forgetting,
    get_rnn_gradient,
    get_rnn_gradient_profile,
    get_rnn_side_by_side,
    get_rnn_timing,
)
from app_pages.frame.charts import chart
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from app_pages.lessons.lesson import MAX_SENTENCE, footer, header
from i18n import N_, _
from model.lessons.rnn import MAX_GRADIENT_WORDS, TIMED_LENGTHS, long_inputs
from viz.heatmap import attention_heatmap
from viz.lessons.rnn import forgetting_figure, gradient_figure, timing_figure
from viz.numbers import significant

PATH = script("lesson_rnn")
DEFAULT = "The big dog chased the small cat because it was angry"
NAMES = {"own-rnn": N_("plain RNN, one vector"), "own-gru": N_("GRU, one vector"),
         "own-bahdanau": N_("GRU + attention (Bahdanau)"),
         "own-translator": N_("Transformer")}
READS = {"own-rnn": N_("its last hidden state only: {width} numbers for the whole sentence"),
         "own-gru": N_("its last hidden state only: {width} numbers for the whole sentence"),
         "own-bahdanau": N_("every hidden state of the encoder, weighted anew at each step"),
         "own-translator": N_("every word's note, through {heads} heads in each of {layers} "
                              "layers")}


def _labels() -> dict[str, str]:
    return {name: _(label) for name, label in NAMES.items()}


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


header(PATH)
st.markdown(_(
    "The lesson's first half is the RNN: one reader goes through the sentence word by word, "
    "keeps one note, and writes the translation from that note alone (§3.1). §3.6 lists what "
    "goes wrong and how the Transformer fixes it. Here every line of that table is **measured** "
    "on four models of this project, trained on the same English→Chinese sentences with the "
    "same words: a plain RNN and a GRU that squeeze the sentence into **one vector**, the same "
    "GRU with **additive attention** (Bahdanau et al. 2014, attention's first form), and the "
    "Transformer (own-translator)."))

_spec, device = settings()
key = "rnn_text"
if not isinstance(st.session_state.get(key, ""), str):
    st.session_state[key] = DEFAULT
text = st.text_input(_("Sentence (English words)"), key=key, max_chars=MAX_SENTENCE,
                     **({} if key in st.session_state else {"value": DEFAULT}),
                     help=_("Any sentence in the translators' words; try a long one with "
                            "“and” to see the single vector lose words."))
if not text.strip():
    st.info(_("Type a sentence to run the models on."))
    st.stop()

st.header(_("1. The same sentence through all four"))
with explained_errors(describe=describe_error("own-translator")):
    side = get_rnn_side_by_side(device, text)
rows = [*side.single_vector.items(), ("own-bahdanau", side.bahdanau),
        ("own-translator", side.transformer)]
dims = get_model("own-translator", device).dims
sizes = {"width": get_recurrent("own-gru", device).network.cfg.d_hidden,
         "heads": dims.n_heads, "layers": dims.n_decoder_layers}
st.table({_("model"): [_(NAMES[name]) for name, _words in rows],
          _("what the writer reads of the source"): [_(READS[name]).format(**sizes)
                                                      for name, _words in rows],
          _("translation"): [" ".join(words) for _name, words in rows]})
left, right = st.columns(2)
with left:
    chart(attention_heatmap(side.bahdanau_alignment, list(side.bahdanau), list(side.source),
                            title=_("Bahdanau: where the GRU looks while writing"),
                            x_title=_("English word (encoder state)"),
                            y_title=_("Chinese word written")),
          key="rnn_bahdanau", name=("bahdanau",), share=0.5)
with right:
    chart(attention_heatmap(side.transformer_alignment, list(side.transformer),
                            list(side.source),
                            title=_("Transformer: cross-attention, last layer, mean of heads"),
                            x_title=_("English word (encoder note)"),
                            y_title=_("Chinese word written")),
          key="rnn_transformer", name=("transformer",), share=0.5)
st.caption(_("The single-vector models have no such picture: all they read of the source is "
             "one vector. Bahdanau's GRU learnt its alignment from translating alone (no "
             "alignment was given in training); the Transformer was trained with a light pull "
             "towards the corpus's word alignment."))

st.header(_("2. Forgetting: long sentences"))
forgetting = get_rnn_forgetting(device)
chart(forgetting_figure(forgetting.bins, forgetting.sentences, forgetting.exact_match,
                        _labels()), key="rnn_forgetting", name=("forgetting",))
longest = len(forgetting.bins) - 1
st.markdown(_(
    "On the 500 held-out sentences (none seen in training), translated greedily: with "
    "{first}–{last} words the plain RNN gets {rnn} exactly right and the GRU {gru}; with up to "
    "{short} words both get {rnn_short} and {gru_short}. Bahdanau's GRU gets {bahdanau} of the "
    "longest and the Transformer {transformer}: reading every encoder state again at each "
    "step, nothing has to survive in one vector.").format(
        first=forgetting.bins[longest][0], last=forgetting.bins[longest][1],
        rnn=_percent(forgetting.exact_match["own-rnn"][longest]),
        gru=_percent(forgetting.exact_match["own-gru"][longest]),
        short=forgetting.bins[0][1],
        rnn_short=_percent(forgetting.exact_match["own-rnn"][0]),
        gru_short=_percent(forgetting.exact_match["own-gru"][0]),
        bahdanau=_percent(forgetting.exact_match["own-bahdanau"][longest]),
        transformer=_percent(forgetting.exact_match["own-translator"][longest])))

st.header(_("3. The information path"))
st.markdown(_(
    "How much does the last position's state still depend on each word? The gradient "
    "‖∂(last state)/∂(word j)‖ answers it, computed by autograd through the real modules: for "
    "a recurrent encoder its last hidden state (the one vector), for the Transformer its "
    "encoder's output at the last word. In an RNN a word's signal crosses one step per word "
    "to reach the end; in the Transformer every word is one attention step away in each "
    "layer."))
if len(text.split()) <= MAX_GRADIENT_WORDS:
    with explained_errors(describe=describe_error("own-translator")):
        path = get_rnn_gradient(device, text)
    chart(gradient_figure(path.distance, {n: path.relative(n) for n in path.norms}, _labels(),
                          words=path.words),
          key="rnn_gradient", name=("gradient",))
texts = tuple(long_inputs())
profile = get_rnn_gradient_profile(device, texts)
chart(gradient_figure(profile.distance, profile.median, _labels(),
                      title=_("Median over {count} texts of about 40 words").format(
                          count=profile.texts)),
      key="rnn_profile", name=("gradient profile",))
decay = {name: profile.decay_per_word(name) for name in profile.median}
reach = int(profile.distance[-1])
st.markdown(_(
    "Each word of distance multiplies the gradient by about {rnn:.3f} in the plain RNN, "
    "{gru:.3f} in the GRU and {transformer:.3f} in the Transformer (a straight line fitted "
    "to the logarithm from the second word before the last on); over {reach} words that is "
    "×{rnn_far:.2f}, ×{gru_far:.2f} and ×{transformer_far:.2f}. These are trained models: "
    "gates learn to keep a path open, and a gradient says what the last state could feel, "
    "not what it uses — the forgetting curve above is the direct measure.").format(
        rnn=decay["own-rnn"], gru=decay["own-gru"], transformer=decay["own-translator"],
        reach=reach, rnn_far=decay["own-rnn"] ** reach, gru_far=decay["own-gru"] ** reach,
        transformer_far=decay["own-translator"] ** reach))

st.header(_("4. Serial steps"))
timing = get_rnn_timing(device, TIMED_LENGTHS)
chart(timing_figure(timing.lengths, {"own-gru": timing.gru, "own-translator": timing.transformer},
                    _labels(), timing.device), key="rnn_timing", name=("timing",))
growth_gru = timing.gru[-1] / timing.gru[0]
growth_transformer = timing.transformer[-1] / timing.transformer[0]
st.markdown(_(
    "From {first:,} to {last:,} tokens ({times:,.0f}× longer) the GRU's pass takes "
    "{gru:,.0f}× as long: it must take its steps one after another. The Transformer's encoder "
    "takes {transformer:,.0f}× as long: all tokens go through each layer at once, so the time "
    "follows the work (n² for attention), not the number of steps. Measured now on {device}, "
    "median of five passes.").format(
        first=TIMED_LENGTHS[0], last=TIMED_LENGTHS[-1], times=TIMED_LENGTHS[-1] / TIMED_LENGTHS[0],
        gru=growth_gru,
        transformer=growth_transformer, device=timing.device))

st.header(_("The §3.6 table, measured here"))
far = int(np.argmax([b[1] for b in forgetting.bins]))
st.table({
    _("RNN's pain"): [_("reads one word at a time"), _("forgets the beginning"),
                      _("the whole sentence in one vector"),
                      _("cannot show where it looks")],
    _("the Transformer's answer"): [_("every word at once"),
                                    _("any two positions one step apart"),
                                    _("every word's note kept"),
                                    _("attention weights can be drawn")],
    _("measured on this page"): [
        _("{tokens:,} tokens: GRU {gru} ms, Transformer {transformer} ms").format(
            tokens=TIMED_LENGTHS[-1], gru=significant(1000 * timing.gru[-1], 3),
            transformer=significant(1000 * timing.transformer[-1], 3)),
        _("gradient per word of distance: RNN ×{rnn:.3f}, GRU ×{gru:.3f}, Transformer "
          "×{transformer:.3f}").format(rnn=decay["own-rnn"], gru=decay["own-gru"],
                                      transformer=decay["own-translator"]),
        _("longest sentences exactly right: RNN {rnn}, GRU {gru}, Transformer "
          "{transformer}").format(rnn=_percent(forgetting.exact_match["own-rnn"][far]),
                                  gru=_percent(forgetting.exact_match["own-gru"][far]),
                                  transformer=_percent(
                                      forgetting.exact_match["own-translator"][far])),
        _("the two heatmaps above")],
})
st.caption(_("The table's fourth pain, depth (residual connections let the Transformer stack "
             "dozens of layers), is lesson 3.2's; the whole comparison is the panorama of "
             "§5.1."))
footer(PATH)
