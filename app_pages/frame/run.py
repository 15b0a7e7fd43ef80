"""The shared load of a run: the sidebar's model and text traced (through the cache), the
server's limits stated, what the tokenizer lost said."""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import streamlit as st

from app_pages.cache.getters import get_model, get_trace, limits
from app_pages.cache.limits import token_budget
from app_pages.frame.charts import EXPORT_CONTEXT, export_name
from app_pages.frame.errors import READS_ANY_SCRIPT, describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.settings import (
    RANDOM_WEIGHTS,
    current_text,
    precision,
    settings,
    within,
)
from i18n import _
from model import AttentionTrace, Family, LoadedModel, UnknownWordsError
from model.analysis.tokens import token_notes
from model.meta import LAST_STATE


def show_token_notes(run: Run) -> None:
    """Warn where the tokenizer lost ([UNK]) or split (byte pieces) part of the input."""
    for note in token_notes(run.trace):
        examples = " ".join(note.examples) + (" …" if note.count > len(note.examples) else "")
        spec = run.key.spec
        if note.kind == "unknown":
            st.warning(literal(
                _("{count} of {total} tokens are [UNK]: {model} has no token for {examples}. "
                  "Attention to an [UNK] says nothing about the text it replaced; this model's "
                  "vocabulary does not cover it (it may have been trained on another language "
                  "or script).").format(count=note.count, total=note.total, model=spec,
                                        examples=examples or _("part of the text"))
                + " " + _(READS_ANY_SCRIPT)))
        else:
            st.info(literal(
                _("{count} characters ({examples}) are split over several tokens, labelled like "
                  "{label}: {model} reads them as bytes, so one character's attention is spread "
                  "over its pieces.").format(count=note.count, examples=examples,
                                             label=note.label, model=spec)))


class RunKey(NamedTuple):
    """What a trace was computed from: the key of every cached result derived from it."""

    spec: str
    device: str
    text: str
    target: str | None
    dtype: str = "auto"


@dataclass(frozen=True)
class Run:
    """One traced input: its cache key, the loaded model (its interface) and the trace."""

    key: RunKey
    model: LoadedModel
    trace: AttentionTrace


def random_weights_note(spec: str) -> None:
    """Say so on the page when ``spec`` has random weights."""
    if spec in RANDOM_WEIGHTS:
        st.info(_("{model} has random weights: it was never trained, so its attention shows "
                  "positions and repeated words, not meaning. The other bundled models are "
                  "trained.").format(model=spec), icon="🎲")


def single_vector_note(trace: AttentionTrace, container=st) -> None:
    """Above the charts of a single-vector model (own-rnn, own-gru): it has no attention, and
    its weight of 1 on the last word is the one state its decoder reads."""
    if trace.meta.get("capture") == LAST_STATE:
        container.info(_("{model} has no attention: at every step its decoder reads the "
                         "encoder's last state, the whole sentence squeezed into one vector. "
                         "Its cross-attention is drawn as that read, exactly: a weight of 1 on "
                         "the last word and 0 on the others. Compare own-bahdanau, the same "
                         "GRU with attention (lesson 3.6).").format(model=literal(trace.model)),
                       icon=":material/compress:")


def state_limits(loaded: LoadedModel, bounds) -> None:
    """Say in the sidebar how long a text this server traces with ``loaded``, before it runs."""
    budget = token_budget(loaded, bounds.request_bytes)
    st.sidebar.caption(_("Here {model} on {device} reads texts of up to {tokens:,} tokens and "
                         "{chars:,} characters; head statistics, model view and rollout up to "
                         "{analysis:,} tokens.").format(
        model=literal(loaded.name), device=f"{loaded.device} · {loaded.dtype}", tokens=budget,
        chars=bounds.max_chars, analysis=min(bounds.analysis_tokens, budget)))


# The bundled model that reads any English text, offered when the chosen one's vocabulary
# lacks a word of the text: a newcomer's first sentence gives a chart one click later.
READS_ANY_TEXT = "minilm"


def _choose_model(spec: str) -> None:
    st.session_state["model_choice"] = spec


@contextmanager
def offer_any_text(spec: str):
    """Where ``spec`` does not know a word of the text: the message, then a button that reads
    the same text with :data:`READS_ANY_TEXT` (the text is kept); the page stops."""
    try:
        yield
    except UnknownWordsError as error:
        if error.side == "target" or spec == READS_ANY_TEXT:
            raise
        st.error(literal(describe_error(spec)(error)))
        st.button(_("Read this text with {model} (a pretrained encoder that reads any "
                    "English text)").format(model=READS_ANY_TEXT), type="primary",
                  key="read_any_text", on_click=_choose_model, args=(READS_ANY_TEXT,),
                  icon=":material/swap_horiz:")
        st.stop()


def load_run() -> Run:
    """The loaded model and the trace of the page's text; explains problems and stops."""

    spec, device = settings()
    bounds = limits()
    with explained_errors():
        text, encoding = current_text(bounds.max_chars)
        target = within(str(st.session_state.get("target", "")).strip(), bounds.max_chars,
                        _("the target text")) or None
    upload = st.session_state.get("upload")
    if upload is not None:
        note = (" " + _("Read as GB18030 (GBK), the usual encoding of Chinese text on Windows; "
                        "if the characters look wrong, save the file as UTF-8.")
                if encoding == "GB18030" else "")
        st.caption(_("Analysing the uploaded file {name} ({count:,} characters).").format(
            name=literal(upload.name), count=len(text)) + note)
    if not spec:
        st.info(_("Type a Hugging Face hub id or a local checkpoint path under the Model box."))
        st.stop()
    with explained_errors(_("Could not load {model}: ").format(model=spec[:80])):
        loaded = get_model(spec, device, precision())
    state_limits(loaded, bounds)
    random_weights_note(spec)
    if not text.strip():
        st.info(_("The uploaded file {name} holds no text: upload another, or remove it (×) to "
                  "type in the text box.").format(name=literal(upload.name))
                if upload is not None else
                _("Type some text in the box above to see its attention."))
        st.stop()
    if loaded.family is not Family.ENCODER_DECODER:
        target = None
    key = RunKey(spec, device, text, target, precision())
    with explained_errors(describe=describe_error(spec)), offer_any_text(spec):
        run = Run(key, loaded, get_trace(*key))
    st.session_state[EXPORT_CONTEXT] = (spec.rsplit("/", 1)[-1], " ".join(text.split()[:6]))
    st.sidebar.download_button(
        _("This trace (.npz)"), data=lambda: trace_bytes(run.trace),
        file_name=f"{export_name('trace')}.npz", mime="application/octet-stream",
        key="trace_npz", on_click="ignore", icon=":material/download:",
        help=_("Every attention weight of this run in the export format (numpy.load reads "
               "it)."))
    show_token_notes(run)
    single_vector_note(run.trace)
    return run


def trace_bytes(trace: AttentionTrace) -> bytes:
    """The trace in its export format (.npz), as bytes."""
    with tempfile.TemporaryDirectory() as folder:
        return trace.save(Path(folder) / "trace.npz").read_bytes()
