"""Translate: the own translator writes one word at a time; step through what it looked at."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages import widgets
from app_pages.cache import get_model, get_trace
from app_pages.common import chart, describe_error, explained_errors, settings
from model.analysis.views import generation_step, written_words

SPEC = "own-translator"
MAX_SENTENCE = 300  # characters: the translator reads at most 64 tokens
EXAMPLES = ("The cat sat on the mat", "The cat chased the mouse because it was hungry",
            "The small dog slept under the table yesterday")


st.title("Translate English → Chinese")
st.caption("This page always runs own-translator; the sidebar's model is for the other pages.")
_, device = settings()
with explained_errors():
    translator = get_model(SPEC, device)
vocabulary = translator.english_words()
with st.expander(f"The translator's English vocabulary ({len(vocabulary)} words)"):
    st.write(" · ".join(vocabulary))
    st.caption("Trained on a synthetic corpus of sentences like “The big dog sat under the "
               "table yesterday” and “The cat chased the mouse because it was hungry”.")

OWN = "(your own sentence)"


def _use_example() -> None:
    if st.session_state["example"] != OWN:
        st.session_state["translate_text"] = st.session_state["example"]


def _own_sentence() -> None:
    """Typing makes the menu say so, so that choosing any example afterwards is a change."""
    typed = st.session_state["translate_text"]
    st.session_state["example"] = typed if typed in EXAMPLES else OWN


widgets.selectbox("Example", [*EXAMPLES, OWN], key="example", on_change=_use_example,
                  help="Choosing one puts it in the sentence box below.")
st.session_state.setdefault("translate_text", EXAMPLES[0])
text = st.text_input("English sentence", key="translate_text", on_change=_own_sentence,
                     max_chars=MAX_SENTENCE)
if not text.strip():
    st.info("Type an English sentence made of the vocabulary's words.")
    st.stop()
with explained_errors(describe=describe_error(SPEC, vocabulary_above=True)):
    trace = get_trace(SPEC, device, text)

written = written_words(trace)  # words 1..n, then <eos>
st.markdown(f"### {' '.join(written[:-1])}")
st.caption(f"{len(written) - 1} words written one at a time, then the end token.")

n_steps = len(trace.steps)
step = widgets.slider("Generation step", 1, n_steps, min(4, n_steps), key="step",
                      help="At step t the decoder has written t − 1 words and chooses word t.")
step_line = st.empty()  # filled once the step is cut from the trace, below the selectors

n_layers = trace.layers("decoder.cross")
left, right = st.columns(2)
layer = widgets.selectbox("Decoder layer", range(n_layers), index=n_layers - 1, key="dec_layer",
                          container=left)
head_choice = widgets.selectbox("Heads", ["average", *range(trace.n_heads)], key="dec_head",
                                container=right, format_func=lambda h: "average of all heads"
                                if h == "average" else f"head {h}")
now = generation_step(trace, step, layer, None if head_choice == "average" else head_choice)
step_line.markdown(f"**Step {step}:** written so far: {' '.join(now.so_far) or '(nothing yet)'} "
                   f"→ chooses **{now.chosen}**")

col_self, col_cross = st.columns(2)
with col_self:
    chart(viz.attention_heatmap(
        now.self_weights, now.rows.labels[:step], now.self_keys, allowed=now.self_allowed,
        query_hover=now.rows.hover[:step], y_title=now.rows.title,
        x_title="key: the words read so far", title=f"Masked self-attention up to step {step}"),
        key="self_heatmap")
    st.caption("Each row is named by the word it writes and reads the word before it: it may "
               "look only at the words read so far; grey cells are masked (−∞ before softmax, "
               "weight 0 after).")
with col_cross:
    chart(viz.distribution_bars(
        now.cross_row, now.source_tokens, highlight=now.cross_peak,
        title=f"Cross-attention of step {step} over the source"), key="cross_bars")
    st.caption(f"Where the decoder looks in the English sentence while choosing “{now.chosen}”.")

col_align, col_topk = st.columns(2)
with col_align:
    chart(viz.attention_heatmap(
        now.alignment, now.rows.labels, now.source_tokens, query_hover=now.rows.hover,
        special=(now.rows.special, ()), title="Alignment: word written × source word",
        x_title="English word", y_title=now.rows.title), key="alignment")
    st.caption("Each row is the cross-attention of the step that wrote that word.")
with col_topk:
    chart(viz.distribution_bars(
        now.top_probabilities, now.top_words, highlight=now.top_chosen,
        title=f"Next-word probabilities at step {step}", value_name="probability"),
        key="topk")
    st.caption("Greedy decoding picks the most probable word (orange).")
