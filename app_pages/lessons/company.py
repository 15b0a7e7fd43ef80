"""Lesson §3.1, a translation company: the old way (one reader, one note) against the new one (a
reading team that reads every word at once, and a writing team that looks back at all the
notes), tied to the own translator's live run on a sentence the reader types."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.cache.getters import get_model, get_trace, heavy_work
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import presenting, settings
from app_pages.lessons.lesson import DEFAULT_SENTENCE, MAX_SENTENCE, footer, header
from i18n import N_, _
from model.lessons.company import company_of, default_step
from viz.lessons.company import DISCUSSION_FROM, company_figure

PATH = script("lesson_company")
MODEL = "own-translator"
TEXT = "co_text"
STEP = "co_step"
# The lesson's table: each improvement of the new way, and the mechanism it stands for.
IMPROVEMENTS = (
    (N_("Everyone reads at once and discusses"),
     N_("Self-attention: every position in parallel, each talking to each directly")),
    (N_("Every note holds the whole text's context"), N_("Context-dependent representations")),
    (N_("The writers look back at the notes of the original"), N_("Cross-attention")),
)

header(PATH)
st.markdown(_(
    "Forget neural networks for a moment and picture a translation company that gets an "
    "English text to put into Chinese (lesson §3.1)."))
old, new = st.columns(2)
old.markdown("#### " + _("The old way (RNN): one person reads it all"))
old.markdown(_(
    "Xiao Wang reads the English word by word, keeping notes in his head. At the end one "
    "note is left, and from that note alone he writes the Chinese, word by word.\n\n"
    "- **Serial:** he must read one word after another; nobody can share the work.\n"
    "- **Forgetting:** the longer the text, the more of its start is squeezed out of the "
    "note.\n"
    "- **Bottleneck:** while writing he holds only that one note; the original is no longer "
    "at hand."))
old.page_link(script("lesson_rnn"), label=_("See the old way run: lesson 3.6, RNNs"),
              icon=":material/history:")
new.markdown("#### " + _("The new way (Transformer): a team"))
new.markdown(_(
    "**The reading team** (the encoder) reads the whole English text at once and discusses "
    "it: each member's note becomes a note written with the whole text in mind.\n\n"
    "**The writing team** (the decoder) writes the Chinese one word at a time; for each word "
    "it looks back over the reading team's full set of notes, picks what matters most now, "
    "and writes the next word."))

st.subheader(_("The company at work in the own translator"))
if not isinstance(st.session_state.get(TEXT, ""), str):
    st.session_state[TEXT] = DEFAULT_SENTENCE
st.session_state.setdefault(TEXT, DEFAULT_SENTENCE)
text = st.text_input(_("Sentence (English words)"), key=TEXT, max_chars=MAX_SENTENCE,
                     help=_("own-translator reads a small English vocabulary (the Translate "
                            "page lists it)."))
_spec, device = settings()
with explained_errors(_("Could not load {model}: ").format(model=MODEL)):
    loaded = get_model(MODEL, device)
if not text.strip():
    st.info(_("Type a sentence to run the model on."))
    st.stop()
with explained_errors(describe=describe_error(MODEL)):
    trace = get_trace(MODEL, device, text)
with heavy_work(_("running the model with hooks")):
    company = company_of(loaded, trace)

widgets.derived((MODEL, text), {STEP: default_step(company)})
step = widgets.selectbox(_("The word being written"), range(len(company.written)), key=STEP,
                         index=default_step(company),
                         format_func=lambda t: company.written_hover[t])
top = company.top_note(step)
reads, writes, looks = st.columns(3)
reads.markdown("**" + _("Who reads: the encoder") + "**")
reads.markdown(literal(_(
    "All {n} source words at once, discussing in {layers} meetings (its layers). Its notes "
    "are its output: one note of {d} numbers per word, a tensor of shape {shape}.").format(
    n=len(company.source_words), layers=company.encoder_layers, d=company.d_model,
    shape="[" + " × ".join(str(n) for n in company.notes_shape[1:]) + "]")))
writes.markdown("**" + _("Who writes: the decoder") + "**")
writes.markdown(literal(_(
    "One word per step, {n} steps: {words}. Each step reads what it wrote so far and the "
    "notes.").format(n=len(company.written), words=" ".join(company.written))))
looks.markdown("**" + _("Where the notes are: cross-attention") + "**")
looks.markdown(literal(_(
    "Writing “{word}”, the decoder's last layer (layer {layer}, its heads averaged) reads "
    "the note of “{note}” most: {weight:.0%} of its attention.").format(
    word=company.written[step], layer=company.layer, note=company.source_words[top],
    weight=company.cross[step, top])))

chart(company_figure(company.source_words, company.written, company.cross,
                     company.discussion, step=step, d_model=company.d_model,
                     font_size=18 if presenting() else 14),
      key="co_figure", name=("company", f"step {step}"))
st.caption(_(
    "Grey lines: the reading team's discussion, where a note read another word (the "
    "encoder's last layer, heads averaged, weights of {least:.0%} or more). Orange lines: "
    "how much the word being written reads each note (the decoder's last cross-attention, "
    "heads averaged), as wide as the weight; the outlined note is read most. Choose "
    "another word above.").format(least=DISCUSSION_FROM))

st.subheader(_("Three improvements, three mechanisms"))
table(pd.DataFrame([(_(change), _(mechanism)) for change, mechanism in IMPROVEMENTS],
                   columns=[_("improvement"), _("mechanism")]), hide_index=True)
st.markdown(_(
    "**The model in one sentence:** a Transformer holds meeting after meeting. At each one "
    "(a layer), every word gathers what it needs from every related word and updates its "
    "understanding; the more meetings, the fuller the understanding. Then it writes the "
    "answer with it. That meeting is attention; the rest is engineering."))
footer(PATH)
