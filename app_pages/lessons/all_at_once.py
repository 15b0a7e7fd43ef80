"""Lesson §4.5, every word at once: §4.3's calculation done for 猫, 追, 老鼠 and 它, first one
word after another (a loop of four), then as one matrix product softmax(QKᵀ/√d_k)·V, equal;
the 4 × 4 weights with 它's row the one §4.3 computed; then the loop and the product timed on
the sidebar's device for growing numbers of rows."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import get_loop_timing
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import stepper
from app_pages.frame.errors import explained_errors
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from app_pages.lessons.lesson import footer, header
from i18n import N_, _
from model.lessons.all_at_once import (
    D_TIMED,
    SEED_DECIMALS,
    TIMED_ROWS,
    every_word,
    seed_inputs,
)
from viz.lessons.all_at_once import timing_chart, weight_matrix
from viz.lessons.numbers import matrix_tex, vector
from viz.numbers import number, thousands, tiny

PATH = script("lesson_all_at_once")
ROUNDINGS = {"seed": N_("as the lesson writes them: every step rounded to 2 decimals"),
             "exact": N_("exact (shown to 4 decimals)")}

header(PATH)
st.markdown(_(
    "§4.3 computed the new vector of one word, 它. Self-attention does the same for every "
    "word: 猫 looks at the whole sentence and updates itself (perhaps mostly from 追: it is "
    "the one chasing), 追 from 猫 and 老鼠, 老鼠 from 追, 它 from 猫. And the four are not a loop "
    "of four: they are **one matrix product**, all at once. That is the root of why the "
    "Transformer is fast."))

inputs = seed_inputs()
words = list(inputs.words)
st.caption(_("The numbers are §4.3's: its keys K, values V and the query of 它, q = {q}. The "
             "lesson gives no query for the other three words; here each word's query is its "
             "own key (as for 它, whose key is also {q}), so 猫 and 它, whose keys are equal, get "
             "the same row.").format(q=vector(inputs.q)))
rounding = widgets.radio(_("Arithmetic"), list(ROUNDINGS), key="aao_rounding",
                         format_func=lambda r: _(ROUNDINGS[r]), horizontal=True)
decimals = SEED_DECIMALS if rounding == "seed" else None
shown = SEED_DECIMALS if rounding == "seed" else 4
found = every_word(inputs, decimals)
Q, loop, loop_weights = found.Q, found.loop, found.loop_weights

step = stepper(_("Steps shown"), len(words) + 1, key="aao_step", lesson=True,
               help=_("One word at a time, as a loop would; the last step does them all at "
                      "once."))
st.subheader(_("① One word after another: a loop"))
for index in range(min(step, len(words))):
    row = loop[index]
    st.markdown(_("**{number}. {word}**: q = {q}; scores q·k / √d_k = {scaled}; weights "
                  "{weights}; new vector **{output}**").format(
        number=index + 1, word=words[index], q=vector(Q[index]),
        scaled=vector(row.scaled, shown), weights=vector(row.weights, shown),
        output=vector(row.output, shown)))
if step <= len(words):
    st.caption(_("Each row is §4.3's five steps again, with the word's own query. Next step: "
                 "the next word."))
else:
    st.caption(_("Four times the same five steps: the rows do not depend on each other, so "
                 "nothing forces them to wait for one another."))
    st.subheader(_("② Every word at once: one product"))
    st.markdown(_("Put the four queries as the rows of Q: one line of the project's "
                  "`attention()` computes every row."))
    st.latex(r"\operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V = "
             r"\operatorname{softmax}\!\left(\frac{1}{\sqrt{2}}" + matrix_tex(Q)
             + matrix_tex(inputs.K.T) + r"\right)" + matrix_tex(inputs.V) + " = "
             + matrix_tex(found.product_output, 4))
    st.success(_("The product's rows are the loop's rows: with exact arithmetic they differ by "
                 "{difference} (float64 rounding). Row 4, 它, is §4.3's result: {output} "
                 "with the lesson's rounding.").format(
        difference=tiny(found.difference), output=vector(found.lesson_row, SEED_DECIMALS)),
        icon=":material/check_circle:")
    chart(weight_matrix(words, loop_weights, row=len(words) - 1, decimals=shown,
                        title=_("The weights of every word at once (row 4: §4.3's 它)")),
          key="aao_weights", share=0.6, name=("weights",))
    st.caption(_("Row i is where word i looks; each row adds up to 1. The outlined row is the "
                 "one §4.3 computed by hand: {weights}.").format(
        weights=vector(loop_weights[-1], shown)))

st.subheader(_("③ Why it is fast: the loop against the product, timed"))
st.markdown(_("The same `attention()` on random queries, keys and values of width {d}: called "
              "once per row (a loop of n), or once on all n rows. Timed live on this server's "
              "device, each the median of several runs.").format(d=D_TIMED))
largest = widgets.select_slider(_("rows up to"), TIMED_ROWS, TIMED_ROWS[-2], key="aao_rows",
                                format_func=thousands)
_spec, device = settings()
with explained_errors(_("Could not time: ")):
    timing = get_loop_timing(device, tuple(n for n in TIMED_ROWS if n <= largest))
if timing.rows:
    chart(timing_chart(timing.rows, timing.loop, timing.product, device=timing.device),
          key="aao_timing", name=("timing", timing.device))
    a, b, c = st.columns(3)
    n = timing.rows[-1]
    a.metric(_("loop, {rows} rows").format(rows=thousands(n)),
             _("{ms} ms").format(ms=number(timing.loop[-1] * 1e3, 2)))
    b.metric(_("product, {rows} rows").format(rows=thousands(n)),
             _("{ms} ms").format(ms=number(timing.product[-1] * 1e3, 2)))
    c.metric(_("the product is faster by"), f"{timing.speedup[-1]:,.1f}×")
    st.caption(_("On {device}, median of up to {runs} runs after a warm-up (the slowest loops "
                 "are run once); a GPU is synchronised before and after each run. The loop "
                 "starts one small computation per row, each waiting for the one before; the "
                 "product hands the device all n rows at once, which it computes in "
                 "parallel. On a busy server the smallest times vary.").format(
        device=timing.device, runs=max(timing.loop_runs + timing.product_runs)))
if timing.skipped:
    st.info(_("Not timed: {rows} rows. The loop would have kept the server busy for too long "
              "on this device.").format(rows=", ".join(thousands(n) for n in timing.skipped)))
footer(PATH)
