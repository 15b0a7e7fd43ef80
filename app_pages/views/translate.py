"""Translate: a translator writes one word at a time; step through what it looked at.

The own translator by default; the sidebar's model when it is another encoder-decoder: a Hugging
Face one (NLLB, M2M100, Marian, T5, ...), which translates with its own ``generate``, or one of
the lesson's recurrent translators (own-rnn, own-gru, own-bahdanau), whose decoder has no
self-attention to show."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import get_model, get_trace
from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import stepper
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.run import single_vector_note
from app_pages.frame.settings import settings
from app_pages.frame.sink import sink_drawn, sink_toggle
from i18n import N_, _
from model.analysis import questions
from model.analysis.cuts import generation_step, written_words
from model.meta import Family

OWN_SPEC = "own-translator"
BUNDLED_NOT_TRANSLATORS = ("own-random", "minilm", "smollm2")
MAX_SENTENCE = 300  # characters: the translator reads at most 64 tokens
EXAMPLES = ("The cat sat on the mat", "The cat chased the mouse because it was hungry",
            "The small dog slept under the table yesterday")


st.title(_("Translate English → Chinese"))
chosen, device = settings()
SPEC = OWN_SPEC
if chosen and chosen not in (OWN_SPEC, *BUNDLED_NOT_TRANSLATORS):
    try:  # the sidebar's checkpoint, when it is a translation model
        if get_model(chosen, device).family is Family.ENCODER_DECODER:
            SPEC = chosen
    except ValueError:  # it did not load: the other pages say why; this one translates anyway
        pass
if SPEC == OWN_SPEC:
    st.caption(_("This page runs own-translator unless the sidebar's model is another "
                 "encoder-decoder: a Hugging Face translation model (NLLB, M2M100, …) or one of "
                 "the lesson's recurrent translators (own-rnn, own-gru, own-bahdanau)."))
elif "decoder.self" not in get_model(SPEC, device).kinds:  # a recurrent translator
    st.caption(_("Translating with the sidebar's model, {model}: a recurrent decoder writing one "
                 "word per step, greedily.").format(model=SPEC))
else:
    st.caption(_("Translating with the sidebar's model, {model}, by its own greedy "
                 "generate.").format(model=literal(SPEC)))
with explained_errors():
    translator = get_model(SPEC, device)
vocabulary = translator.english_words() if hasattr(translator, "english_words") else None
if vocabulary is not None:
    with st.expander(_("The translator's English vocabulary ({count} words)").format(
            count=len(vocabulary))):
        st.write(" · ".join(vocabulary))
        st.caption(_("Trained on a synthetic corpus of sentences like “The big dog sat under "
                     "the table yesterday” and “The cat chased the mouse because it was "
                     "hungry”."))

OWN = N_("(your own sentence)")  # the option's value; shown translated


def _use_example() -> None:
    if st.session_state["example"] != OWN:
        st.session_state["translate_text"] = st.session_state["example"]


def _own_sentence() -> None:
    """Typing makes the menu say so, so that choosing any example afterwards is a change."""
    typed = st.session_state["translate_text"]
    st.session_state["example"] = typed if typed in EXAMPLES else OWN


typed = st.session_state.get("translate_text")
if isinstance(typed, str):  # a link's sentence (or an earlier one): the menu says which it is
    if len(typed) > MAX_SENTENCE:
        st.warning(_("The sentence was cut to at most {limit} characters: the translator "
                     "reads at most 64 tokens.").format(limit=MAX_SENTENCE))  # (own)
        cut = typed[:MAX_SENTENCE]  # at a word's end
        st.session_state["translate_text"] = typed = (
            cut.rsplit(" ", 1)[0] if " " in cut and typed[MAX_SENTENCE] != " " else cut)
    st.session_state["example"] = typed if typed in EXAMPLES else OWN
widgets.selectbox(_("Example"), [*EXAMPLES, OWN], key="example", on_change=_use_example,
                  format_func=lambda example: _(OWN) if example == OWN else example,
                  help=_("Choosing one puts it in the sentence box below."))
st.session_state.setdefault("translate_text", EXAMPLES[0])
text = st.text_input(_("English sentence"), key="translate_text", on_change=_own_sentence,
                     max_chars=MAX_SENTENCE)
if not text.strip():
    st.info(_("Type an English sentence made of the vocabulary's words.")
            if vocabulary is not None else _("Type an English sentence."))
    st.stop()
with explained_errors(describe=describe_error(SPEC, vocabulary_above=vocabulary is not None)):
    trace = get_trace(SPEC, device, text)

single_vector_note(trace)
written = written_words(trace)  # words 1..n, then <eos>
heading = st.empty()  # the translation as far as the step: a later word is not given away

n_steps = len(trace.steps)
widgets.derived((SPEC, text), {"step": 1})  # another sentence starts from its first word
step = stepper(_("Generation step"), n_steps, key="step",
               help=_("At step t the decoder has written t − 1 words and chooses word t."))
step_line = st.empty()  # filled once the step is cut from the trace, below the selectors

n_layers = trace.layers("decoder.cross")
left, right = st.columns(2)
layer = widgets.selectbox(_("Decoder layer"), range(n_layers), index=n_layers - 1, key="dec_layer",
                          container=left)
head_choice = widgets.selectbox(_("Heads"), ["average", *range(trace.n_heads)], key="dec_head",
                                container=right, format_func=lambda h: _("average of all heads")
                                if h == "average" else _("head {head}").format(head=h))
now = generation_step(trace, step, layer, None if head_choice == "average" else head_choice)
heading.markdown("### " + literal(" ".join(written[:min(step, len(written) - 1)]))
                 + (" …" if step < len(written) - 1 else ""))
step_line.markdown(_("**Step {step}:** written so far: {so_far} → chooses **{word}**").format(
    step=step, so_far=" ".join(now.so_far) or _("(nothing yet)"), word=now.chosen))

sink_on = sink_toggle()
sunk_align = sink_drawn(sink_on, now.alignment[:step], first_token=str(now.source_tokens[0]))
col_self, col_cross = st.columns(2)
with col_self:
    if now.self_weights is None:  # a recurrent decoder: a state carried from word to word
        st.info(_("{model}'s decoder has no self-attention: it reads the words written so far "
                  "one at a time and carries them in its state, so step {step} sees them only "
                  "through that one vector (lesson 3.6).").format(model=SPEC, step=step),
                icon=":material/repeat:")
    else:
        sunk_self = sink_drawn(sink_on, now.self_weights, now.self_allowed,
                               first_token=str(now.self_keys[0]))
        chart(viz.attention_heatmap(
            sunk_self.weights, now.rows.labels[:step], now.self_keys, allowed=now.self_allowed,
            query_hover=now.rows.hover[:step], y_title=now.rows.title,
            x_title=_("key: the words read so far"), zmax=sunk_self.zmax or 1.0,
            title=_("Masked self-attention up to step {step}").format(step=step)
            + (f"<br><sup>{sunk_self.short}</sup>" if sunk_self.short else "")),
            key="self_heatmap", share=0.5)
        if sunk_self.note:
            st.caption(sunk_self.note)
        st.caption(_("Each row is named by the word it writes and reads the word before it: it "
                     "may look only at the words read so far; grey cells are masked (−∞ before "
                     "softmax, weight 0 after)."))
with col_cross:
    chart(viz.distribution_bars(
        now.cross_row, now.source_tokens, highlight=now.cross_peak,
        title=_("Cross-attention of step {step} over the source").format(step=step),
        value_name=_("weight")), key="cross_bars", share=0.5)
    st.caption(_("Where the decoder looks in the English sentence while choosing “{word}”.")
               .format(word=now.chosen))

col_align, col_topk = st.columns(2)
with col_align:
    chart(viz.attention_heatmap(
        sunk_align.weights, now.rows.labels[:step], now.source_tokens,
        query_hover=now.rows.hover[:step], special=([r for r in now.rows.special if r < step], ()),
        title=_("Alignment: word written × source word, up to step {step}").format(step=step)
        + (f"<br><sup>{sunk_align.short}</sup>" if sunk_align.short else ""),
        x_title=_("English word"), y_title=now.rows.title, zmax=sunk_align.zmax or 1.0),
        key="alignment", share=0.5)
    if sunk_align.note:
        st.caption(sunk_align.note)
    st.caption(_("Each row is the cross-attention of the step that wrote that word; the rows "
                 "of later steps appear as the steps are reached."))
with col_topk:
    chart(viz.distribution_bars(
        now.top_probabilities, now.top_words, highlight=now.top_chosen,
        title=_("Next-word probabilities at step {step}").format(step=step),
        value_name=_("probability")),
        key="topk", share=0.5)
    st.caption(_("Greedy decoding picks the most probable word (orange)."))

# a live class: where does the decoder look while it writes this step's word
live.offer("translate", lambda: questions.most_attended(
    trace, "decoder.cross", layer, None if head_choice == "average" else head_choice, step - 1))
