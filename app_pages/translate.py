"""Translate: the own translator writes one word at a time; step through what it looked at."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache import get_model, get_trace
from app_pages.common import settings
from model.tokenizer import UnknownWordsError

SPEC = "own-translator"
EXAMPLES = ("The cat sat on the mat", "The cat chased the mouse because it was hungry",
            "The small dog slept under the table yesterday")

st.title("Translate English → Chinese")
st.caption("This page always runs own-translator; the sidebar's model is for the other pages.")
_, device = settings()
try:
    translator = get_model(SPEC, device)
except ValueError as error:
    st.error(str(error))
    st.stop()
vocabulary = sorted(translator.src_vocab.itos[4:])
with st.expander(f"The translator's English vocabulary ({len(vocabulary)} words)"):
    st.write(" · ".join(vocabulary))
    st.caption("Trained on a synthetic corpus of sentences like “The big dog sat under the "
               "table yesterday” and “The cat chased the mouse because it was hungry”.")

example = st.selectbox("Example", EXAMPLES, key="example")
text = st.text_input("English sentence", example, key="translate_text")
if not text.strip():
    st.info("Type an English sentence made of the vocabulary's words.")
    st.stop()
try:
    trace = get_trace(SPEC, device, text)
except UnknownWordsError as error:
    st.error("The translator does not know: " + ", ".join(f"“{w}”" for w in error.words)
             + ". Nothing was dropped: replace these words with words from the vocabulary "
               "above.")
    st.stop()
except ValueError as error:
    st.error(str(error))
    st.stop()

written = [step["token"] for step in trace.steps]  # words 1..n, then <eos>
st.markdown(f"### {' '.join(written[:-1])}")
st.caption(f"{len(written) - 1} words written one at a time, then the end token.")

n_steps = len(trace.steps)
step = st.slider("Generation step", 1, n_steps, min(4, n_steps), key="step",
                 help="At step t the decoder has written t − 1 words and chooses word t.")
t = step - 1  # the query row that writes word t + 1
so_far = " ".join(written[:t]) or "(nothing yet)"
st.markdown(f"**Step {step}:** written so far: {so_far} → chooses **{written[t]}**")

n_layers = trace.layers("decoder.cross")
left, right = st.columns(2)
layer = left.selectbox("Decoder layer", range(n_layers), index=n_layers - 1, key="dec_layer")
head_choice = right.selectbox("Heads", ["average", *range(trace.n_heads)], key="dec_head",
                              format_func=lambda h: "average of all heads" if h == "average"
                              else f"head {h}")


def head_weights(name: str):
    if head_choice == "average":
        return trace.mean_weights(name, layer)
    return trace.weights(name, layer, head_choice)


self_w, cross_w = head_weights("decoder.self"), head_weights("decoder.cross")
target_tokens = list(trace.target_tokens)
source_tokens = list(trace.source_tokens)
col_self, col_cross = st.columns(2)
with col_self:
    st.plotly_chart(viz.attention_heatmap(
        self_w[:step, :step], target_tokens[:step], target_tokens[:step],
        allowed=trace.mask("decoder.self")[:step, :step],
        title=f"Masked self-attention up to step {step}"), key="self_heatmap")
    st.caption("Each row may look only at itself and earlier words: grey cells are masked "
               "(−∞ before softmax, weight 0 after).")
with col_cross:
    st.plotly_chart(viz.distribution_bars(
        cross_w[t], source_tokens, highlight=int(cross_w[t].argmax()),
        title=f"Cross-attention of step {step} over the source"), key="cross_bars")
    st.caption("Where the decoder looks in the English sentence while choosing "
               f"“{written[t]}”.")

col_align, col_topk = st.columns(2)
with col_align:
    rows = [f"{i + 1}: {w}" for i, w in enumerate(written)]
    st.plotly_chart(viz.attention_heatmap(
        cross_w, rows, source_tokens, title="Alignment: word written × source word",
        x_title="English word", y_title="step: word written"),
        key="alignment")
    st.caption("Row t is the cross-attention of the step that wrote word t.")
with col_topk:
    top = trace.steps[t]["top_k"]
    labels = [token for token, _ in top]
    st.plotly_chart(viz.distribution_bars(
        [p for _, p in top], labels,
        highlight=labels.index(written[t]) if written[t] in labels else None,
        title=f"Next-word probabilities at step {step}", value_name="probability"),
        key="topk")
    st.caption("Greedy decoding picks the most probable word (orange).")
