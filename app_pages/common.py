"""Sidebar settings shared by every page, kept in ``st.session_state``; the shared load of a run;
the one way a page explains an expected error."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import streamlit as st

import model
from app_pages import widgets
from model import AttentionTrace, Family, LoadedModel

DEFAULT_MODEL = "own-random"
DEFAULT_TEXT = "The cat sat on the mat"
DEVICES = ("auto", "cpu", "cuda")
OTHER = "other…"
MODEL_HELP = {
    "own-random": "the seed's default encoder-decoder, random weights (fixed seed); its "
                  "vocabulary is built from your text",
    "own-translator": "the project's small English→Chinese translator",
    "minilm": "all-MiniLM-L6-v2: a 6-layer BERT encoder (12 heads)",
    "smollm2": "SmolLM2-135M-Instruct: a 30-layer Llama decoder, 9 query / 3 key-value heads",
    OTHER: "a Hugging Face hub id (needs network) or a local checkpoint folder or .gguf file",
}
KIND_LABELS = {
    "encoder.self": "encoder self-attention",
    "decoder.self": "decoder masked self-attention",
    "decoder.cross": "decoder cross-attention (target → source)",
}


SHARED_KEYS = ("model_choice", "model_other", "device", "text", "target")


def sidebar(with_text: bool = True) -> None:
    """Draw the shared sidebar: model, device and (for the analysis pages) the text."""
    # Streamlit forgets a widget's value after a run that does not draw it (the Translate and
    # Positions pages hide the text). Writing the values back makes them plain session state,
    # which lasts until the widget is drawn again.
    for key in SHARED_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    with st.sidebar:
        choices = (*model.BUNDLED, OTHER)
        choice = widgets.selectbox("Model", choices, key="model_choice",
                                   index=choices.index(DEFAULT_MODEL),
                              help="\n".join(f"- **{c}**: {h}" for c, h in MODEL_HELP.items()))
        st.caption(MODEL_HELP[choice])
        if choice == OTHER:
            st.text_input("Hub id or local path", key="model_other",
                          placeholder="e.g. gpt2, ./my-checkpoint, ~/models/tiny.gguf")
        widgets.radio("Device", DEVICES, key="device", horizontal=True,
                 help="auto runs on CUDA when this machine has a GPU, else on the CPU.")
        if with_text:
            st.text_area("Text", DEFAULT_TEXT, key="text", height=100,
                         help="Type or paste text; it is tokenised as the model does.")
            st.file_uploader("…or upload a text file", type=["txt", "md"], key="upload",
                             help="UTF-8 text; while a file is loaded it replaces the box above.")
            st.text_input("Target text (encoder-decoder models, optional)", key="target",
                          help="Teacher-forced output. Leave empty to trace the model's own "
                               "greedy output.")


def settings() -> tuple[str, str]:
    """The chosen ``(model spec, device)``; the spec is empty until an 'other' one is typed."""
    choice = st.session_state.get("model_choice", DEFAULT_MODEL)
    spec = st.session_state.get("model_other", "").strip() if choice == OTHER else choice
    return spec, st.session_state.get("device", "auto")


def decode_upload(data: bytes, name: str = "the file") -> str:
    """Text of an uploaded file: UTF-8 (a byte-order mark is dropped), or a clear error."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name} is not UTF-8 text (byte {error.start} cannot be read); save "
                         f"it as UTF-8 and upload it again") from None


def current_text() -> str:
    """The text to analyse: an uploaded file's, else the text box's."""
    upload = st.session_state.get("upload")
    if upload is not None:
        return decode_upload(upload.getvalue(), upload.name)
    return st.session_state.get("text", DEFAULT_TEXT)


class RunKey(NamedTuple):
    """What a trace was computed from: the key of every cached result derived from it."""

    spec: str
    device: str
    text: str
    target: str | None


@dataclass(frozen=True)
class Run:
    """One traced input: its cache key, the loaded model (its interface) and the trace."""

    key: RunKey
    model: LoadedModel
    trace: AttentionTrace


@contextmanager
def explained_errors(prefix: str = "", describe: Callable[[ValueError], str] = str):
    """Show the expected errors of the block (bad input, a model that cannot load: every
    ``ValueError``) as a message on the page, then stop the page.

    Args:
        prefix: put before the message (e.g. "Could not load x: ").
        describe: turns the error into the message (default: its own text).
    """
    try:
        yield
    except ValueError as error:
        st.error(prefix + describe(error))
        st.stop()


def load_run() -> Run:
    """The loaded model and the trace of the sidebar's text; explains problems and stops."""
    from app_pages.cache import get_model, get_trace

    spec, device = settings()
    with explained_errors():
        text = current_text()
    if st.session_state.get("upload") is not None:
        st.caption(f"Analysing the uploaded file {st.session_state['upload'].name} "
                   f"({len(text):,} characters).")
    target = st.session_state.get("target", "").strip() or None
    if not spec:
        st.info("Type a Hugging Face hub id or a local checkpoint path in the sidebar.")
        st.stop()
    with explained_errors(f"Could not load {spec}: "):
        loaded = get_model(spec, device)
    if not text.strip():
        st.info("Type some text in the sidebar to see its attention.")
        st.stop()
    if loaded.family is not Family.ENCODER_DECODER:
        target = None
    key = RunKey(spec, device, text, target)
    with explained_errors():
        return Run(key, loaded, get_trace(*key))


def kind_selector(trace, container=st, key: str = "kind", kinds=None) -> str:
    """A select box of the trace's attention kinds."""
    kinds = kinds or trace.names
    return widgets.selectbox("Attention", kinds, key=key, container=container,
                             format_func=lambda n: f"{n} · {KIND_LABELS[n]}")


def open_head(name: str, layer: int, head: int) -> None:
    """Show one head in the Explore page."""
    st.session_state["open_head"] = (name, layer, head)
    st.switch_page("app_pages/explore.py")


def window_selector(n_tokens: int, limit: int, key: str) -> tuple[int, int]:
    """A token window ``(start, stop)`` of at most ``limit`` tokens for long inputs."""
    if n_tokens <= limit:
        return 0, n_tokens
    start = widgets.slider(f"Window start (the input has {n_tokens} tokens; {limit} are shown)",
                           0, n_tokens - limit, 0, key=key)
    return start, start + limit
