"""Lesson §4.8: self-attention's n²·d against a recurrent layer's n·d², with the length n and
the width d both chosen, and the crossover at n = d."""

from __future__ import annotations

import streamlit as st

from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.navigation import script
from app_pages.lessons.lesson import footer, header
from i18n import _
from model.lessons.complexity import operation_counts
from viz.lessons.complexity import complexity_lesson
from viz.numbers import count, thousands

PATH = script("lesson_complexity")
N_CHOICES = tuple(2 ** k for k in range(0, 21))  # 1 .. 1,048,576 tokens
D_CHOICES = (64, 128, 256, 512, 576, 768, 1024, 2048, 4096, 5120, 8192, 12288, 16384)



header(PATH)
st.markdown(_("Per layer, self-attention compares every token with every token: about n²·d "
              "operations for n tokens of width d. A recurrent layer (RNN) passes a d-wide "
              "state through a d × d matrix once per token: about n·d². Which is larger depends "
              "on whether n or d is (lesson §4.8: the paper's table read today). Move both "
              "sliders."))
left, right = st.columns(2)
n = widgets.select_slider(_("sequence length n (tokens)"), N_CHOICES, 256, key="cx_n",
                          container=left, format_func=thousands)
d = widgets.select_slider(_("model width d"), D_CHOICES, 512, key="cx_d", container=right,
                          format_func=thousands,
                          help=_("own-translator 128, minilm 384, the lesson's model 512, "
                                 "smollm2 576, BERT-base 768, a 7-billion-parameter Llama "
                                 "4,096."))
ops = operation_counts(n, d)
c1, c2, c3 = st.columns(3)
c1.metric(_("self-attention n²·d"), count(ops.attention),
          f"{n:,}² × {d:,}", delta_color="off", delta_arrow="off")
c2.metric(_("RNN n·d²"), count(ops.recurrent), f"{n:,} × {d:,}²", delta_color="off",
          delta_arrow="off")
if ops.attention < ops.recurrent:
    verdict = _("attention does {times:,.1f}× less work").format(times=ops.ratio)
elif ops.attention > ops.recurrent:
    verdict = _("attention does {times:,.1f}× more work").format(times=1 / ops.ratio)
else:
    verdict = _("the same work: n = d")
c3.metric(_("n·d² ÷ n²·d = d ÷ n"), f"{ops.ratio:,.3g}", verdict, delta_color="off",
          delta_arrow="off")
chart(complexity_lesson(n, d), key="cx_chart", name=(f"n{n}", f"d{d}"))
st.caption(_("Both axes are logarithmic, so both costs are straight lines: n²·d climbs twice "
             "as steeply as n·d². They cross where n = d (the dotted line; the orange diamond "
             "is where both equal d³). Left of it, while the text is shorter than the model is "
             "wide, attention does less work; right of it, the n² term takes over."))
st.markdown(_("Today's language models are mostly left of the crossover: a context of a few "
              "thousand tokens against a width of thousands. Attention's n² matters for long "
              "texts: doubling n quadruples attention's work but only doubles the RNN's. "
              "Attention also does its work for all tokens at once, while an RNN must take "
              "its n steps one after another."))
footer(PATH)
