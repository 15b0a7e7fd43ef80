"""Lesson §4.3, by hand: the four words 猫 / 追 / 老鼠 / 它 with editable keys, values and query;
each step of the calculation revealed in turn beside the lines of the project's own
``attention()`` that compute it, then the same in matrix form; the function itself run on the
same numbers."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import stepper
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.lessons.lesson import footer, header
from i18n import N_, _
from model.analysis import questions
from model.lessons.hand import (
    SEED_DECIMALS,
    SEED_K,
    SEED_Q,
    SEED_V,
    SEED_WORDS,
    attention_lines,
    hand_inputs,
    hand_steps,
    run_attention,
    translated_comments,
)
from model.lessons.typed import LARGEST_INPUT
from viz.lessons.hand import hand_weights, value_mix
from viz.lessons.numbers import matrix_tex, vector
from viz.numbers import number

PATH = script("lesson_hand")
TABLE = "hand_table"
QUERY = ("hand_q1", "hand_q2")
COLUMNS = ("word", "k1", "k2", "v1", "v2")
ROUNDINGS = {"seed": N_("as the lesson writes them: every step rounded to 2 decimals"),
             "exact": N_("exact (shown to 4 decimals)")}
STEPS = (N_("dot products q·k"), N_("divide by √d_k"), N_("e to the power of each"),
         N_("their sum"), N_("softmax: the weights"), N_("weighted rows of V"),
         N_("the output"), N_("matrix form: the scores"), N_("matrix form: softmax"),
         N_("matrix form: the output"))
# Which lines of attention() compute each step (the markers of its comments).
CODE = (("①",), ("d_k", "①"), ("③",), ("③",), ("③",), ("④",), ("④",), ("d_k", "①", "②"),
        ("③",), ("④",))


def code_notes() -> tuple[str, ...]:
    """What each step's lines of attention() do, in the current language."""
    return (
        _("① `torch.matmul(Q, K.transpose(-2, -1))` computes every q·k at once."),
        _("The same line divides by `math.sqrt(d_head)`; `d_head` is the lesson's d_k, read "
          "from the width of Q."),
        _("③ Inside `F.softmax`: e to the power of every score of the row (`dim=-1`). It first "
          "subtracts the row's largest score, which leaves the weights as they are and keeps "
          "eˣ from overflowing."),
        _("③ Still inside `F.softmax`: the sum of the row's eˣ."),
        _("③ `F.softmax` ends by dividing each eˣ by the sum: steps 3 to 5 are this one line."),
        _("④ Inside `torch.matmul(weights, V)`: each row of V multiplied by its weight."),
        _("④ …and the products added up, one output row per query: steps 6 and 7 are this one "
          "line."),
        _("① for every query at once: Q has one row per query (here one, the query of the last "
          "word). ② would set forbidden scores to −∞; nothing is masked here."),
        _("③ softmax of each row of the scores."),
        _("④ the weights times V: every query's output at once."))


def reset() -> None:
    """Back to the lesson's numbers."""
    for key in (TABLE, *QUERY):
        st.session_state.pop(key, None)


def _row_key(row) -> bool:
    return isinstance(row, int) and not isinstance(row, bool) or (
        isinstance(row, str) and row.isdigit())


def clean_table(n_rows: int) -> None:
    """Forget remembered edits of the table that the table cannot apply (not its kind of
    record, rows it does not have, columns it does not have), saying so."""
    state = st.session_state.get(TABLE)
    if state is None:
        return
    try:
        assert isinstance(state, dict) and set(state) <= {"edited_rows", "added_rows",
                                                          "deleted_rows"}
        edited = state.get("edited_rows", {})
        assert isinstance(edited, dict)
        for row, cells in edited.items():
            assert _row_key(row) and int(row) < n_rows + len(state.get("added_rows", []))
            assert isinstance(cells, dict) and set(cells) <= set(COLUMNS)
        added = state.get("added_rows", [])
        assert isinstance(added, list)
        assert all(isinstance(cells, dict) and set(cells) <= set(COLUMNS) for cells in added)
        deleted = state.get("deleted_rows", [])
        assert isinstance(deleted, list)
        assert all(_row_key(row) and int(row) < n_rows + len(added) for row in deleted)
    except AssertionError:
        del st.session_state[TABLE]
        st.warning(_("The table's remembered edits could not be read; it shows the lesson's "
                     "numbers again."))


def code_beside(container, markers, lines, note: str) -> None:
    """The lines of attention() with ``markers`` and where they are in the file."""
    blocks = [lines[m] for m in markers if m in lines]
    if not blocks:
        container.caption(_("The lines of `attention()` for this step were not found in its "
                            "source."))
        return
    # the code as it is in the file, its comments in the page's language
    container.code("\n".join(translated_comments(block.code) for block in blocks),
                   language="python", wrap_lines=True)
    first, last = min(b.first for b in blocks), max(b.last for b in blocks)
    container.caption(_("`{path}`, lines {first}–{last}, read from the function itself.").format(
        path=blocks[0].path, first=first, last=last) + " " + note)


header(PATH)
st.markdown(_(
    "The lesson's four words 猫 / 追 / 老鼠 / 它 (cat / chases / mouse / it): we compute the "
    "new vector of the last word. Its query **q** says what it looks for (an animal); each "
    "word offers a key **k** (what it matches) and a value **v** (what it passes on). Each "
    "vector has 2 entries here (64 in a real head), so every number can be checked by hand. "
    "Change any number in the table or in q: every step below follows."))

words = [_(word) for word in SEED_WORDS]
base = pd.DataFrame({"word": words, "k1": [k[0] for k in SEED_K], "k2": [k[1] for k in SEED_K],
                     "v1": [v[0] for v in SEED_V], "v2": [v[1] for v in SEED_V]})
clean_table(len(base))
for key, default, label in zip(QUERY, SEED_Q, ("q₁", "q₂")):
    widgets.number_value(key, default, label, LARGEST_INPUT, empty_ok=True)
left, right = st.columns([3, 2])
number_column = {"min_value": -LARGEST_INPUT, "max_value": LARGEST_INPUT, "step": 0.01}
with left:
    st.markdown(_("**Keys and values** (add or delete rows for more or fewer words)"))
    table = st.data_editor(
        base, key=TABLE, num_rows="dynamic", hide_index=True, width="stretch",
        column_config={
            "word": st.column_config.TextColumn(_("word"), max_chars=20),
            "k1": st.column_config.NumberColumn("k₁", help=_("first entry of the key"),
                                                **number_column),
            "k2": st.column_config.NumberColumn("k₂", help=_("second entry of the key"),
                                                **number_column),
            "v1": st.column_config.NumberColumn("v₁", help=_("first entry of the value"),
                                                **number_column),
            "v2": st.column_config.NumberColumn("v₂", help=_("second entry of the value"),
                                                **number_column)})
with right:
    st.markdown(_("**The query q** of the last word"))
    q_columns = st.columns(2)
    # No bounds on the boxes: a number out of range reaches the page, which says so (a bounded
    # box would keep it in the browser, beside the result of the number before); what a box
    # cannot hold (NaN, ±∞) arrives as None, which the page says is not a number.
    query = [q_columns[i].number_input(label, value=None, step=0.1, key=key,
                                       placeholder=_("a number"))
             for i, (key, label) in enumerate(zip(QUERY, ("q₁", "q₂")))]
    rounding = widgets.radio(_("Arithmetic"), list(ROUNDINGS), key="hand_rounding",
                             format_func=lambda r: _(ROUNDINGS[r]),
                             help=_("The lesson writes each intermediate value with two "
                                    "decimals and goes on from the rounded value; that is how "
                                    "it gets 6.71 and [0.85, 1.25]. Exact arithmetic keeps "
                                    "every digit."))
    st.button(_("Reset"), on_click=reset, key="hand_reset", icon=":material/restart_alt:",
              help=_("Back to the lesson's numbers"))

shown = SEED_DECIMALS if rounding == "seed" else 4
try:
    inputs = hand_inputs(table["word"].tolist(), table[["k1", "k2"]].values.tolist(),
                         table[["v1", "v2"]].values.tolist(), query)
    steps = hand_steps(inputs, SEED_DECIMALS if rounding == "seed" else None)
    exact = hand_steps(inputs)
    torch_output, torch_weights = run_attention(inputs)
except ValueError as error:
    st.error(literal(str(error)), icon=":material/edit_off:")
    steps = None

if steps is not None:
    labels = [literal(word) for word in inputs.words]
    lines = attention_lines()
    notes = code_notes()
    step = stepper(_("Steps shown"), len(STEPS), key="hand_step", lesson=True,
                   help=_("Reveal the calculation one step at a time, as in class."))

    def n(x) -> str:
        """A number of the calculation, as the chosen arithmetic writes it."""
        return number(x, shown)

    def v(x) -> str:
        """A vector of the calculation, as the chosen arithmetic writes it."""
        return vector(x, shown)

    def section(index: int):
        """The columns of step ``index`` (0-based): its arithmetic, and its code."""
        st.markdown("#### " + _("Step {step}: {title}").format(step=index + 1,
                                                                title=_(STEPS[index])))
        text, code = st.columns([3, 2])
        code_beside(code, CODE[index], lines, notes[index])
        return text

    q_text = vector(inputs.q)
    if step >= 1:
        with section(0):
            st.markdown(_("Score = q · k: multiply the entries pairwise and add. The larger "
                          "the score, the better the key matches the query."))
            st.markdown("\n".join(
                f"- **{label}**: {q_text} · {vector(k)} = "
                + " + ".join(f"{number(a)}×{number(b)}" for a, b in zip(inputs.q, k))
                + f" = **{n(score)}**"
                for label, k, score in zip(labels, inputs.K, steps.scores)))
    if step >= 2:
        with section(1):
            st.markdown(_("d_k = {d_k} (the length of q and of each k), so √d_k = {root}. "
                          "Dividing keeps the scores small whatever d_k is (lesson §4.4: why "
                          "divide).").format(d_k=inputs.d_k, root=n(steps.sqrt_dk)))
            st.markdown("\n".join(
                f"- **{label}**: {n(score)} / {n(steps.sqrt_dk)} = **{n(scaled)}**"
                for label, score, scaled in zip(labels, steps.scores, steps.scaled)))
    if step >= 3:
        with section(2):
            st.markdown(_("e to the power of each scaled score: every result is positive, and "
                          "larger scores grow much faster."))
            st.markdown("\n".join(
                f"- **{label}**: $e^{{{n(scaled)}}}$ = **{n(e)}**"
                for label, scaled, e in zip(labels, steps.scaled, steps.exps)))
    if step >= 4:
        with section(3):
            st.markdown(_("Add them up: this sum is what every eˣ will be divided by."))
            st.markdown(" + ".join(n(e) for e in steps.exps) + f" = **{n(steps.total)}**")
    if step >= 5:
        with section(4):
            st.markdown(_("Each eˣ divided by the sum: the weights, which add up to 1."))
            st.markdown("\n".join(
                f"- **{label}**: {n(e)} / {n(steps.total)} = **{n(w)}** ({w:.0%})"
                for label, e, w in zip(labels, steps.exps, steps.weights)))
            chart(hand_weights(inputs.words, steps.weights, shown), key="hand_weights",
                  share=0.55, name=("weights",))
    if step >= 6:
        with section(5):
            st.markdown(_("Each row of V times its weight."))
            st.markdown("\n".join(
                f"- **{label}**: {n(w)} × {vector(row)} = **{v(part)}**"
                for label, w, row, part in zip(labels, steps.weights, inputs.V,
                                               steps.weighted)))
    if step >= 7:
        with section(6):
            st.markdown(_("Add the weighted rows: the new vector of the last word, a mix of "
                          "what the words it attends to pass on."))
            st.markdown(" + ".join(v(part) for part in steps.weighted)
                        + f" = **{v(steps.output)}**")
            chart(value_mix(inputs.words, inputs.V, steps.weights, steps.output),
                  key="hand_mix", share=0.55, name=("output",))
        difference = float(abs(torch_output - exact.output).max())
        rounded = float(abs(exact.output - steps.output).max())
        if rounding == "seed":
            st.success(_("The project's `attention()` run on these numbers (`torch`, `float64`) "
                         "returns the weights {weights} and the output {output}. The lesson's "
                         "rounded steps differ from it by up to {rounded:.4f}: the price of "
                         "rounding every step to 2 decimals.").format(
                weights=vector(torch_weights, 4), output=vector(torch_output, 4),
                rounded=rounded), icon=":material/check_circle:")
        else:
            st.success(_("The project's `attention()` run on these numbers (`torch`, `float64`) "
                         "returns the weights {weights} and the output {output}: the same as "
                         "the steps above (they differ by {difference:.1e}).").format(
                weights=vector(torch_weights, 4), output=vector(torch_output, 4),
                difference=difference), icon=":material/check_circle:")
    if step >= 8:
        st.markdown(_("**In matrix form**, all at once: with every word's query as a row of Q, "
                      "three lines compute every word's new vector together; here Q has one "
                      "row, the query of the last word."))
        with section(7):
            st.latex(r"\text{Scores} = \frac{Q K^\top}{\sqrt{d_k}} = \frac{1}{"
                     + n(steps.sqrt_dk) + "}" + matrix_tex(inputs.q) + matrix_tex(inputs.K.T)
                     + " = " + matrix_tex(steps.scaled, shown))
    if step >= 9:
        with section(8):
            st.latex(r"\text{Weights} = \operatorname{softmax}(\text{Scores}) = "
                     + matrix_tex(steps.weights, shown))
    if step >= 10:
        with section(9):
            st.latex(r"\text{Output} = \text{Weights}\, V = " + matrix_tex(steps.weights, shown)
                     + matrix_tex(inputs.V) + " = " + matrix_tex(steps.output, shown))

if steps is not None:  # a live class: the first word's weight, from the table's numbers
    live.offer("hand", lambda: questions.scaled_weight(exact.scores, inputs.d_k))
footer(PATH)
