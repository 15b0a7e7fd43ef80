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
from model.lessons.rnn import FAR, MAX_GRADIENT_WORDS, TIMED_LENGTHS, long_inputs, words_in
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
    "goes wrong and how the Transformer fixes it. Here the table's lines are **measured** "
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
st.caption(_("Bahdanau's model here is simplified in one respect: its encoder reads left to "
             "right only (the paper's joins a backward pass) and its decoder starts from the "
             "last state, as the single-vector models' do, so that the three differ in "
             "attention alone."))

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
if words_in(text) <= MAX_GRADIENT_WORDS:
    with explained_errors(describe=describe_error("own-translator")):
        path = get_rnn_gradient(device, text)
    chart(gradient_figure(path.distance, {n: path.relative(n) for n in path.norms}, _labels(),
                          words=path.words),
          key="rnn_gradient", name=("gradient",))
texts = tuple(long_inputs())
lengths = [words_in(t) for t in texts]
profile = get_rnn_gradient_profile(device, texts)
chart(gradient_figure(profile.distance, profile.median, _labels(),
                      title=_("Median over {count} texts of {shortest}–{longest} words").format(
                          count=profile.texts, shortest=min(lengths), longest=max(lengths))),
      key="rnn_profile", name=("gradient profile",))
ratio = {name: profile.far_over_near(name) for name in profile.median}
measured = _(
    "At the {far} farthest words the last state's gradient is ×{rnn:.2f} of its value at the "
    "five nearest in the plain RNN, ×{gru:.2f} in the GRU and ×{transformer:.2f} in the "
    "Transformer's encoder (medians over the texts).").format(
        far=FAR, rnn=ratio["own-rnn"], gru=ratio["own-gru"],
        transformer=ratio["own-translator"])
if max(ratio["own-rnn"], ratio["own-gru"]) < ratio["own-translator"]:
    reading = _("The recurrent encoders feel far words less than near ones, more so than the "
                "Transformer, whose profile is flat but for the last word itself.")
else:
    reading = _("Here the gradient does not set the recurrent encoders apart from the "
                "Transformer.")
st.markdown(measured + " " + reading + " " + _(
    "The profiles are uneven, these texts are longer than any training sentence, and gates "
    "learn to keep a path open; a gradient says what the last state could feel, not what it "
    "uses — the forgetting curve above is the direct measure."))

st.header(_("4. Serial steps"))
timing = get_rnn_timing(device, TIMED_LENGTHS)
chart(timing_figure(timing.lengths, {"own-gru": timing.gru, "own-translator": timing.transformer},
                    _labels(), timing.device), key="rnn_timing", name=("timing",))
per_token = {name: [significant(1e6 * t / n, 3) for t, n in zip(times, timing.lengths)]
             for name, times in (("gru", timing.gru), ("transformer", timing.transformer))}
cheapest = int(np.argmin([t / n for t, n in zip(timing.transformer, timing.lengths)]))
first, last = TIMED_LENGTHS[0], TIMED_LENGTHS[-1]
gru_ms, transformer_ms = (significant(1000 * t[-1], 3) for t in (timing.gru, timing.transformer))
said = _(
    "Per token, the GRU's pass costs {g_first} µs at {first:,} tokens and {g_last} µs at "
    "{last:,}: its steps run one after another, so more tokens never make one cheaper. The "
    "Transformer's encoder costs {t_first} µs per token at {first:,} tokens and {t_cheapest} "
    "µs at {cheapest:,}: the tokens share its matrix products, computed at once.").format(
        g_first=per_token["gru"][0], g_last=per_token["gru"][-1], first=first, last=last,
        t_first=per_token["transformer"][0], t_cheapest=per_token["transformer"][cheapest],
        cheapest=timing.lengths[cheapest])
if timing.transformer[-1] > timing.gru[-1]:
    said += " " + _(
        "At {last:,} tokens it is nevertheless the slower here ({transformer} ms against "
        "{gru} ms): on {device} its n² attention outweighs the GRU's {last:,} small serial "
        "steps. Parallelism pays where the hardware runs the products at once (a GPU), and in "
        "training, where every target word of a batch is computed in one pass.").format(
            last=last, transformer=transformer_ms, gru=gru_ms, device=timing.device)
else:
    said += " " + _("At {last:,} tokens it takes {transformer} ms against the GRU's {gru} "
                    "ms.").format(last=last, transformer=transformer_ms, gru=gru_ms)
st.markdown(said + " " + _("Measured now on {device}, median of five passes.").format(
    device=timing.device))

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
        _("gradient at far words ÷ near ones: RNN ×{rnn:.2f}, GRU ×{gru:.2f}, Transformer "
          "×{transformer:.2f}").format(rnn=ratio["own-rnn"], gru=ratio["own-gru"],
                                      transformer=ratio["own-translator"]),
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
