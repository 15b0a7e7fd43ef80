"""Sidebar settings shared by every page, kept in ``st.session_state``."""

from __future__ import annotations

import streamlit as st

import model

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


def sidebar() -> None:
    """Draw the shared sidebar: model and device."""
    with st.sidebar:
        choices = (*model.BUNDLED, OTHER)
        choice = st.selectbox("Model", choices, key="model_choice",
                              index=choices.index(DEFAULT_MODEL),
                              format_func=lambda c: c if c == OTHER else f"{c}",
                              help="\n".join(f"- **{c}**: {h}" for c, h in MODEL_HELP.items()))
        st.caption(MODEL_HELP[choice])
        if choice == OTHER:
            st.text_input("Hub id or local path", key="model_other",
                          placeholder="e.g. gpt2, ./my-checkpoint, ~/models/tiny.gguf")
        st.radio("Device", DEVICES, key="device", horizontal=True,
                 help="auto runs on CUDA when this machine has a GPU, else on the CPU.")


def settings() -> tuple[str, str]:
    """The chosen ``(model spec, device)``; the spec is empty until an 'other' one is typed."""
    choice = st.session_state.get("model_choice", DEFAULT_MODEL)
    spec = st.session_state.get("model_other", "").strip() if choice == OTHER else choice
    return spec, st.session_state.get("device", "auto")
