"""Lesson §4.4, why divide by √d_k: the spread of q·k grows like √d_k, large scores push
softmax to one-hot (the lesson's [8, −3]), a one-hot softmax has almost no gradient, and a
real head of the own translator with and without the division."""

from __future__ import annotations

import math

import streamlit as st

from app_pages.cache.getters import get_dot_products, get_trace, get_width_statistics
from app_pages.frame import live as live_class
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import kind_selector
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import kind_name, settings
from app_pages.lessons.lesson import footer, header
from i18n import _
from model.analysis import questions
from model.lessons.scaling import (
    D_K_CHOICES,
    SEED_SCORES,
    WIDTH_SAMPLES,
    trace_scaling,
    two_scores,
)
from model.lessons.typed import LARGEST_INPUT, checked_number
from viz.lessons import scaling as figures
from viz.lessons.numbers import vector
from viz.numbers import exponential, significant

PATH = script("lesson_scaling")
SCORES = ("scale_s1", "scale_s2")
SPEC, SENTENCE = "own-translator", "The cat sat on the mat"


header(PATH)
st.markdown(_(
    "A score q·k adds up d_k products. If the entries of q and k are random, with mean 0 and "
    "variance 1, each product has variance 1, and the sum of d_k of them has variance d_k: its "
    "spread (standard deviation) is **√d_k**. A real head has d_k = 64, so scores of ±8 are "
    "ordinary. Move d_k and watch the spread."))
d_k = widgets.select_slider(_("d_k, the width of q and k"), D_K_CHOICES, 64, key="scale_dk",
                            help=_("The number of entries of each query and key vector (64 "
                                   "in the lesson's model, 512 / 8)."))
root = math.sqrt(d_k)

st.subheader(_("1 · The spread of q·k grows like √d_k"))
products = get_dot_products(d_k)
spread = float(products.std())
m1, m2, m3 = st.columns(3)
m1.metric(_("measured spread of q·k"), f"{spread:.2f}")
m2.metric("√d_k", f"{root:.2f}")
m3.metric(_("spread of q·k / √d_k"), f"{spread / root:.2f}")
chart(figures.dot_product_spread(products, d_k), key="scale_hist", name=("q_k", d_k))
left, right = st.columns(2)
spreads, (without, with_) = get_width_statistics()
chart(figures.spread_by_width(D_K_CHOICES, spreads, current=d_k),
      key="scale_by_width", container=left, share=0.5, name=("spread",))
right.markdown(_(
    "Each dot is the spread of q·k measured on {n:,} random pairs; the dotted line is √d_k. "
    "They lie on it: at d_k = 512 the spread is {measured:.1f}, and √512 = {root:.1f}. Divided "
    "by √d_k (orange), the spread stays at 1 whatever d_k is: the scores keep the same size in "
    "a small model and in a large one.").format(
    n=WIDTH_SAMPLES, measured=spreads[D_K_CHOICES.index(512)], root=math.sqrt(512)))

st.subheader(_("2 · Without the division, softmax becomes one-hot"))
st.markdown(_("Two scores as large as d_k = 64 makes them: the lesson's 8 and −3. Change them, "
              "or d_k above, which sets the divisor √d_k."))
labels = (_("first score"), _("second score"))
for key, default, label in zip(SCORES, SEED_SCORES, labels):
    widgets.number_value(key, default, label, LARGEST_INPUT, empty_ok=True)
s1, s2, _spacer = st.columns([1, 1, 2])
# No bounds on the boxes: a number out of range reaches the page, which says so (a bounded box
# would keep it in the browser, beside the result of the number before); what a box cannot
# hold (NaN, ±∞) arrives as None, not as a bound.
scores = [column.number_input(label, value=None, step=1.0, key=key, placeholder=_("a number"))
          for column, key, label in zip((s1, s2), SCORES, labels)]
try:
    sat = two_scores([checked_number(s, label) for s, label in zip(scores, labels)], d_k)
except ValueError as error:
    st.error(literal(str(error)), icon=":material/edit_off:")
    sat = None
if sat is not None:
    text, plot = st.columns(2)
    with text:
        exps = ", ".join(f"$e^{{{s:g}}}$ = {exponential(e)}" for s, e in zip(sat.scores, sat.exps))
        st.markdown(_("**Without ÷√d_k:** {exps} → softmax ≈ **{weights}**").format(
            exps=exps, weights=vector(sat.raw, 3)))
        st.markdown(_("**With ÷√d_k = ÷{root}:** scores {scaled} → softmax ≈ "
                      "**{weights}**").format(root=f"{root:.2f}",
                                              scaled=vector(sat.scaled_scores, 2),
                                              weights=vector(sat.scaled, 3)))
        st.markdown(_(
            "The gradient tells training how to change the scores. A softmax that is almost "
            "one-hot barely moves when its scores move, so its gradient is almost 0 and the "
            "scores get no signal to learn from."))
        st.metric(_("gradient size without ÷√d_k"), significant(sat.raw_gradient))
        st.metric(_("gradient size with ÷√d_k"), significant(sat.scaled_gradient))
        st.caption(_("Gradient size: the norm of softmax's Jacobian ∂p/∂s, the change of every "
                     "weight for a small change of every score."))
    chart(figures.softmax_pair(sat.raw, sat.scaled, [f"{s:g}" for s in sat.scores], root),
          key="scale_softmax", container=plot, share=0.5, name=("softmax",))

left, right = st.columns(2)
chart(figures.gradient_by_width(D_K_CHOICES, without, with_, current=d_k),
      key="scale_gradient", container=left, share=0.5, name=("gradient",))
right.markdown(_(
    "The same for rows of 8 random scores q·k at every d_k: without the division the "
    "gradient shrinks as d_k grows, because the softmax saturates; with it the gradient keeps "
    "its size. That is why the lesson's model can train at d_k = 64."))

st.subheader(_("3 · In a trained model: the own translator"))
st.markdown(_(
    "own-translator on “The cat sat on the mat”: one head's scores Q·Kᵀ before the division "
    "and after it. It was trained with the division; without it, softmax of the same Q and K "
    "would be far sharper."))
_model, device = settings()
try:
    trace = get_trace(SPEC, device, SENTENCE)
except ValueError as error:
    st.error(literal(str(error)))
    trace = None
if trace is not None:
    c1, c2, c3 = st.columns([2, 1, 1])
    name = kind_selector(trace, c1, key="scale_kind")
    layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="scale_layer",
                              container=c2)
    head = widgets.selectbox(_("Head"), range(trace.n_heads), key="scale_head", container=c3)
    live = trace_scaling(trace, name, layer, head)
    st.markdown(_("This model's heads are {d_k} wide, so its scores are divided by √{d_k} ≈ "
                  "{root:.2f}.").format(d_k=round(live.sqrt_dk ** 2), root=live.sqrt_dk))
    m1, m2 = st.columns(2)
    m3, m4 = st.columns(2)
    m1.metric(_("spread before ÷√d_k"), f"{live.raw_spread:.2f}")
    m2.metric(_("spread after ÷√d_k"), f"{live.scaled_spread:.2f}")
    m3.metric(_("largest weight per row, without"), f"{live.raw_peak:.3f}")
    m4.metric(_("largest weight per row, with"), f"{live.peak:.3f}")
    queries, keys = trace.axes(name)
    chart(figures.scaling_heatmaps(
        live.raw_weights, live.weights, queries, keys, live.sqrt_dk,
        title=_("softmax of one head's scores · {name} · layer {layer} · head {head}").format(
            name=kind_name(name), layer=layer, head=head)), key="scale_live",
        name=(name, layer, head))
    st.caption(_("The spread of the allowed scores of this head; the largest weight per row, "
                 "averaged over the rows (1 would be one-hot)."))

if sat is not None:  # a live class: the two scores above, without and with the division
    live_class.offer("scaling", lambda: questions.softmax_first(sat.scores),
                     lambda: questions.scaled_weight(sat.scores, d_k))
footer(PATH)
