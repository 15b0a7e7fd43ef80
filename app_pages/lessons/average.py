"""Lesson §4.1, attention is a weighted average: to understand 它 in 「猫 追 老鼠 ， 因为 它 饿
了」, score every word, turn the scores into weights that add up to 1, and mix the words'
information by them. The scores and points are editable; then the own translator's head whose
row for "it" weighs "cat" most (found in the trace) shows the same mix, learnt."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.cache.getters import get_model, get_trace, heavy_work
from app_pages.frame.charts import chart
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from app_pages.lessons.lesson import footer, header
from i18n import _
from model.lessons.average import (
    INFO,
    IT_CAT,
    QUERY_WORD,
    SCORES,
    WORDS,
    checked_inputs,
    model_row,
    weighted_average,
)
from model.lessons.typed import LARGEST_INPUT
from viz.lessons.average import mix_plane, scores_and_weights
from viz.lessons.average import model_row as row_figure
from viz.lessons.numbers import vector
from viz.numbers import number, tiny

PATH = script("lesson_average")
TABLE = "avg_table"
COLUMNS = ("word", "score", "info1", "info2")
SPEC = "own-translator"


def reset() -> None:
    """Back to the lesson's scores and points."""
    st.session_state.pop(TABLE, None)


def clean_table(n_rows: int) -> None:
    """Forget remembered edits the table cannot apply (not its kind of record, rows or columns
    it does not have), saying so."""
    state = st.session_state.get(TABLE)
    if state is None:
        return
    try:
        assert isinstance(state, dict) and set(state) <= {"edited_rows", "added_rows",
                                                          "deleted_rows"}
        edited = state.get("edited_rows", {})
        assert isinstance(edited, dict)
        for row, cells in edited.items():
            assert (isinstance(row, int) and not isinstance(row, bool)
                    or isinstance(row, str) and row.isdigit()) and int(row) < n_rows
            assert isinstance(cells, dict) and set(cells) <= set(COLUMNS[1:])
        assert not state.get("added_rows") and not state.get("deleted_rows")
    except AssertionError:
        del st.session_state[TABLE]
        st.warning(_("The table's remembered edits could not be read; it shows the lesson's "
                     "numbers again."))


header(PATH)
st.markdown(_(
    "Who is **it** in “the cat chases the mouse, because it is hungry”? A reader knows at once: "
    "the cat. Taken apart, that judgement is three steps: **scan** every candidate word; "
    "**score** how relevant each is (the cat goes with being hungry: a high score; “chases” is "
    "a verb: a low one); **mix** the words' information by their scores, more of the "
    "high-scoring ones. In numbers: result = w₁ × info₁ + w₂ × info₂ + …, with the weights "
    "adding up to 1. That is all attention is; queries, keys and values (§4.2) only make the "
    "scores and the information learnable."))

words = [_(word) for word in WORDS]
base = pd.DataFrame({"word": words, "score": list(SCORES), "info1": [p[0] for p in INFO],
                     "info2": [p[1] for p in INFO]})
clean_table(len(base))
number_column = {"min_value": -LARGEST_INPUT, "max_value": LARGEST_INPUT, "step": 0.1}
left, right = st.columns([3, 2])
with left:
    st.markdown(_("**① Scan and score**: how relevant each word is to “{it}” (change any "
                  "number)").format(it=words[QUERY_WORD]))
    table = st.data_editor(
        base, key=TABLE, num_rows="fixed", hide_index=True, width="stretch",
        disabled=["word"],
        column_config={
            "word": st.column_config.TextColumn(_("word")),
            "score": st.column_config.NumberColumn(
                _("score"), help=_("relevance to the word being understood: any number, "
                                   "higher means more relevant"), **number_column),
            "info1": st.column_config.NumberColumn(
                _("information ₁"), help=_("first entry of the word's information"),
                **number_column),
            "info2": st.column_config.NumberColumn(
                _("information ₂"), help=_("second entry of the word's information"),
                **number_column)})
with right:
    st.markdown(_("**② The weights** are the scores through softmax: e to the power of each "
                  "score, divided by their sum. Every weight is positive and together they "
                  "make 1; a higher score always gets a larger share."))
    st.latex(r"w_i = \frac{e^{s_i}}{\sum_j e^{s_j}}")
    st.button(_("Reset"), on_click=reset, key="avg_reset", icon=":material/restart_alt:",
              help=_("Back to the lesson's numbers"))

try:
    scores, info = checked_inputs(words, table["score"].tolist(),
                                  table[["info1", "info2"]].values.tolist())
except ValueError as error:
    st.error(literal(str(error)), icon=":material/edit_off:")
    st.stop()
mix = weighted_average(scores, info)
top = mix.largest
a, b, c = st.columns(3)
a.metric(_("largest weight"), f"{mix.weights[top]:.0%}", words[top], delta_color="off",
         delta_arrow="off")
b.metric(_("sum of the weights"), number(float(mix.weights.sum()), 4))
c.metric(_("the mix for “{it}”").format(it=words[QUERY_WORD]), vector(mix.output, 2))
chart(scores_and_weights(words, mix.scores, mix.weights, highlight=top), key="avg_weights",
      name=("weights",))

st.markdown(_("**③ Mix**: each word's information times its weight, added up."))
st.markdown(" + ".join(f"{number(w, 2)} × {vector(p, 2)}" for w, p in zip(mix.weights, info))
            + f" = **{vector(mix.output, 2)}**")
chart(mix_plane(words, info, mix.weights, mix.output,
                title=_("The mix is a weighted average: it lies among the words, pulled to "
                        "the heavy ones"),
                axis_titles=(_("information ₁"), _("information ₂"))),
      key="avg_plane", name=("mix",))
st.caption(_("Each dot is a word's information, as large as its weight; the star is the "
             "weighted average. Raise a word's score and the star moves towards it; give "
             "every word the same score and the star sits at the plain average."))

st.subheader(_("The model's own weighted average"))
st.markdown(_("The project's translator was never told who “it” is. Here it reads “{sentence}”; "
              "every head of its encoder is searched for the one whose row for “it” puts the "
              "most weight on “cat”. That row is a weighted average the model learnt: its "
              "weights come from the model's own scores (§4.2), and they too add up to 1.")
            .format(sentence=IT_CAT.sentence))
_spec, device = settings()
with explained_errors(_("Could not load {model}: ").format(model=SPEC)):
    loaded = get_model(SPEC, device)
    trace = get_trace(SPEC, device, IT_CAT.sentence)
with heavy_work(_("running the model with hooks")):
    found = model_row(loaded, trace)
it_label, cat_label = literal(found.tokens[found.query]), literal(found.tokens[found.key])
st.markdown((_("**Layer {layer}, head {head}** of {count} encoder heads: in its row for "
               "“{it}”, “{cat}” has the largest weight, {weight:.2f}. The weights add up to "
               "{total}.") if found.argmax_is_key else
             _("**Layer {layer}, head {head}** of {count} encoder heads puts the most weight "
               "on “{cat}” in its row for “{it}”, {weight:.2f}, though another word weighs "
               "more in that row. The weights add up to {total}.")).format(
    layer=found.layer, head=found.head, count=found.grid.size, it=it_label, cat=cat_label,
    weight=found.weights[found.key], total=number(float(found.weights.sum()), 4)))
row_title = _("Layer {layer}, head {head}: the weights of “{it}”").format(
    layer=found.layer, head=found.head, it=found.tokens[found.query])
chart(row_figure(found.tokens, found.weights, found.key, title=row_title), key="avg_row",
      name=("own-translator", f"layer {found.layer}", f"head {found.head}"))
chart(mix_plane(found.tokens, found.plane, found.weights, found.plane_output,
                title=_("The head's output for “{it}”: a weighted average of its values")
                .format(it=found.tokens[found.query]),
                axis_titles=(_("first main direction"), _("second main direction")),
                output_label=_("output")),
      key="avg_model_plane", name=("own-translator", f"layer {found.layer}",
                                   f"head {found.head}", "values"))
st.caption(_("Each dot is a token's value vector in this head ({d} numbers), drawn on the two "
             "directions along which the values spread most; the star is the head's output "
             "for “{it}” as the model computed it. A projection onto a plane keeps weighted "
             "averages, so the star lies where the weights put it: the weights times the "
             "values differ from the model's output by {difference}.").format(
    d=found.values.shape[1], it=it_label,
    difference=tiny(found.difference)))
footer(PATH)
