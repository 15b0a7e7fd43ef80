"""Corpus: many sentences at once (files or pasted lines), every head's statistics averaged
over them with confidence intervals, span attention, and any sentence opened in Explore."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import viz
from app_pages.cache.getters import (
    find_corpus,
    get_columns,
    get_corpus,
    get_model,
    get_sentence_file,
    get_token_counts,
    get_trace,
    limits,
)
from app_pages.cache.shared import Cancelled
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import metric_name, open_head
from app_pages.frame.errors import explained_errors
from app_pages.frame.events import selected_head
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import PAGES, script
from app_pages.frame.run import random_weights_note, single_vector_note
from app_pages.frame.settings import kind_label, settings, within
from i18n import _
from model.analysis.statistics import STATS
from model.corpus.sentences import (
    FORMATS,
    SentenceLimits,
    default_column,
    split_lines,
)
from model.corpus.statistics import (
    SPAN,
    Span,
    defined_statistics,
    longest_sentence,
    queries_per_sentence,
    ranked_heads,
    sentence_values,
    sentences_ran,
    summarise_heads,
)

KEPT_FILES = "cp_kept_files"  # the uploaded files, kept while another page is shown
# What the tables write for a value that does not exist (no interval from one sentence, no
# span where no token matched): Streamlit's own is "None".
MISSING = "—"

st.title(_("Corpus"))
st.caption(_("Run many sentences at once: every head's statistics averaged over them, with a "
             "95% confidence interval, and the attention between the tokens you choose. "
             "Averages describe where heads look, not why a model decides."))
bounds = limits()
spec, device = settings()
if not spec:
    st.info(_("Type a Hugging Face hub id or a local checkpoint path in the sidebar."))
    st.stop()
with explained_errors(_("Could not load {model}: ").format(model=spec[:80])):
    loaded = get_model(spec, device)
random_weights_note(spec)

sentence_limits = SentenceLimits(max_bytes=bounds.corpus_file_bytes,
                                 max_sentences=bounds.corpus_sentences, max_chars=bounds.max_chars)


def _files_changed() -> None:
    """The user added or removed files: what the uploader holds now is what is kept."""
    st.session_state[KEPT_FILES] = None


files = widgets.file_uploader(
    _("Sentence files"), type=[f.removeprefix(".") for f in FORMATS], key="cp_files",
    accept_multiple_files=True, max_upload_size=max(1, bounds.corpus_file_bytes >> 20),
    on_change=_files_changed,
    help=_("`.txt` or `.md`: one sentence per line. `.csv` or `.tsv`: a header row, and the "
           "column you choose. `.jsonl`: one JSON object per line, and the field you choose. "
           "UTF-8, or GB18030/GBK."))
# Streamlit forgets an uploader's files when another page is shown: the files are kept in the
# session, and used again until the user changes the uploader (a reload starts a new session).
uploads = [(upload.name, upload.getvalue()) for upload in files or []]
if uploads:
    st.session_state[KEPT_FILES] = uploads
elif st.session_state.get(KEPT_FILES):
    uploads = st.session_state[KEPT_FILES]
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.caption(_("Using the files uploaded before you left this page: {names}. Upload files "
                 "to replace them.").format(names=literal(", ".join(n for n, _d in uploads))))
    if c2.button(_("Forget them"), key="cp_forget_files", icon=":material/delete:"):
        st.session_state[KEPT_FILES] = None
        st.rerun()
pasted = st.text_area(_("…or paste sentences, one per line"), key="cp_pasted", height=120,
                      placeholder="the cat sat on the mat because it was tired\n"
                                  "the dog sat on the sofa because it was hungry")
st.caption(_("At most {sentences:,} sentences at once, files of at most {size:.0f} MB, and "
             "{tokens:,} tokens per sentence. Pasted sentences travel in the page's link when "
             "they fit; uploaded files do not, and a reload forgets them.").format(
    sentences=bounds.corpus_sentences, size=bounds.corpus_file_bytes / 2**20,
    tokens=bounds.corpus_tokens))

sentences: list[str] = []
with explained_errors():
    for name_, data in uploads:
        column = None
        found = get_columns(name_, data)
        if found:  # the choice is kept per file name: removing a file moves no choice
            column = widgets.selectbox(
                _("Column of {name}").format(name=literal(name_)), found,
                index=found.index(default_column(found)), key=f"cp_column_{name_}")
        read = get_sentence_file(name_, data, column, sentence_limits)
        if read.dropped:
            st.caption(_("{name}: {count:,} rows have no text in {column} and are left "
                         "out.").format(name=literal(name_), count=read.dropped,
                                        column=literal(column)))
        sentences += read.sentences
    sentences += split_lines(within(pasted or "", bounds.max_chars, _("the pasted text")))
    if len(sentences) > bounds.corpus_sentences:
        raise ValueError(_("{count:,} sentences together; this server runs at most {most:,} at "
                           "once: remove some").format(count=len(sentences),
                                                       most=bounds.corpus_sentences))
if not sentences:
    st.info(_("Upload a file or paste a few sentences, one per line, to begin."))
    st.stop()

with st.expander(_("Span attention (optional): from the tokens you choose to others")):
    c1, c2 = st.columns(2)
    queries = c1.text_input(_("Query tokens"), key="cp_queries", placeholder="it",
                            help=_("A word, or words joined by | (a regular expression matched "
                                   "against whole tokens, ignoring case)."))
    keys = c2.text_input(_("Key tokens"), key="cp_keys", placeholder="cat|mat|dog",
                         help=_("The tokens whose share of the queries' attention is measured."))
    before = st.checkbox(_("Only keys before the query"), key="cp_before")
span = Span(queries, keys, before) if queries.strip() or keys.strip() else None
if span is not None:
    with explained_errors():
        span.compiled()

with explained_errors():
    lengths = get_token_counts(spec, device, tuple(sentences))
    longest, most_tokens = longest_sentence(lengths)
    if most_tokens > bounds.corpus_tokens:
        raise ValueError(_("sentence {index} is {count:,} tokens long; this server runs "
                           "sentences of at most {most:,} tokens: shorten it").format(
            index=longest + 1, count=most_tokens, most=bounds.corpus_tokens))
request = (spec, device, tuple(sentences), span)
if st.button(_("Run {count:,} sentences").format(count=len(sentences)), key="cp_run",
             type="primary", icon=":material/play_arrow:"):
    st.session_state["cp_request"] = request
if st.session_state.get("cp_request") != request:
    if find_corpus(*request) is None:  # a run of these sentences is shown again at once
        st.caption(_("{count:,} sentences ready ({tokens:,} tokens in all).").format(
            count=len(sentences), tokens=int(sum(lengths))))
        st.stop()
    st.session_state["cp_request"] = request

with explained_errors():
    try:
        table, skipped, tokens = get_corpus(spec, device, tuple(sentences), span)
    except Cancelled:  # this session's browser has gone: nobody to show it to
        st.stop()
ran = sentences_ran(table)
if ran and not any(kind.endswith(".self") for kind in loaded.kinds):  # a recurrent translator
    first = next(i for i, row in enumerate(tokens) if row is not None)
    with explained_errors():  # (traced once, cached: milliseconds for these small models)
        single_vector_note(get_trace(spec, device, sentences[first]))
outcome = _("{ran:,} of {count:,} sentences ran on {model}.").format(
    ran=ran, count=len(sentences), model=spec)
if ran == len(sentences):
    st.success(outcome)
elif ran:  # a partial run is no success: the averages below leave the others out
    st.warning(outcome + " " + _("The averages below leave the others out; the list beneath "
                                 "says why."), icon=":material/warning:")
else:
    st.error(outcome, icon=":material/error:")
if skipped:
    with st.expander(_("Sentences left out: {count:,}").format(count=len(skipped))):
        for index, message in skipped:
            st.markdown(literal(f"{index + 1}. {sentences[index][:80]}: {message}"))
if not ran:
    st.stop()

kinds = list(dict.fromkeys(table["kind"].tolist()))
c1, c2 = st.columns(2)
name = widgets.selectbox(_("Attention"), kinds, key="cp_kind", container=c1, format_func=kind_label)
metrics = defined_statistics(table, name, (*STATS, *([SPAN] if span else [])))
metric = widgets.selectbox(_("Statistic"), metrics, key="cp_metric", format_func=metric_name,
                           container=c2)
summary = summarise_heads(table, name, metric)
description = (_(STATS[metric]) if metric in STATS else _(
    "mean weight from the query tokens {queries} to the key tokens {keys}").format(
    queries=span.queries, keys=span.keys))
event = chart(viz.stats_heatmap(
    summary.mean, metric_name(metric),
    _("mean over {count:,} sentences · {description}").format(
        count=int(summary.count.max()), description=description),  # where it is defined
    interval=(summary.low, summary.high), counts=summary.count),
    key="cp_heatmap", on_select="rerun", selection_mode="points",
    name=("corpus", name, metric))
chosen = selected_head(event)
n_layers, n_heads = summary.mean.shape
# a click chooses the head below once: the chart keeps its selection over reruns, and the
# boxes must stay free to change after it
if chosen is not None and chosen != st.session_state.get("cp_clicked"):
    st.session_state["cp_layer"], st.session_state["cp_head"] = chosen
st.session_state["cp_clicked"] = chosen

st.subheader(_("Heads ranked by their mean"))
ranked = pd.DataFrame(ranked_heads(summary)).rename(columns={
    "layer": _("layer"), "head": _("head"), "mean": _("mean"), "low": _("95% CI low"),
    "high": _("95% CI high"), "sentences": _("sentences")})
three = st.column_config.NumberColumn(format="%.3f")
# (no fixed height: a short table draws no blank rows under its last)
st.dataframe(ranked, hide_index=True, key="cp_ranked", placeholder=MISSING,
             column_config={_(c): three for c in ("mean", "95% CI low", "95% CI high")})

st.subheader(_("Sentence by sentence"))
c1, c2 = st.columns(2)
layer = widgets.selectbox(_("Layer"), range(n_layers), key="cp_layer", container=c1)
head = widgets.selectbox(_("Head"), range(n_heads), key="cp_head", container=c2)
# one row per sentence that ran, numbered as the sentences are (the left-out ones are listed
# above, with why): no blank rows
rows = [int(i) for i in np.unique(table["sentence"])]
values = sentence_values(table, name, layer, head, metric, len(sentences))[rows]
queries_per = queries_per_sentence(table, name, len(sentences))[rows]
value_column = f"{metric_name(metric)} · {layer} · {head}"
frame = pd.DataFrame({_("sentence"): [sentences[i] for i in rows],
                      _("tokens"): [" · ".join(tokens[i] or ()) for i in rows],
                      _("length"): queries_per, value_column: values},
                     index=pd.Index([i + 1 for i in rows]))
st.caption(_("Select a row to open that sentence in another view, at layer {layer}, head "
             "{head}.").format(layer=layer, head=head))
picked = st.dataframe(frame, key="cp_table", on_select="rerun", selection_mode="single-row",
                      placeholder=MISSING, column_config={value_column: three})
if picked and picked.selection.rows and picked.selection.rows[0] < len(rows):
    row = rows[picked.selection.rows[0]]
    if st.session_state.get("upload") is not None:
        st.warning(_("A file is loaded in the sidebar: the other views show it. Remove it (×) "
                     "to open this sentence."))
        st.stop()
    views = {spec.path: spec for spec in PAGES if spec.reads_text}
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    view = widgets.selectbox(_("View"), list(views), key="cp_view", container=c1,
                             format_func=lambda path: _(views[path].title))
    if c2.button(_("Open sentence {index}").format(index=row + 1), key="cp_open",
                 icon=":material/open_in_new:"):
        st.session_state["text"] = sentences[row]
        if view == script("explore"):
            open_head(name, layer, head)
        for param, key, _type in views[view].link:  # the view's own kind, layer and head
            value = {"kind": name, "layer": layer, "head": head}.get(param)
            if value is not None:
                st.session_state[key] = value
        st.switch_page(view)
