"""All Streamlit caching: models with ``st.cache_resource``, traces with ``st.cache_data``."""

from __future__ import annotations

import streamlit as st

import model


@st.cache_resource(show_spinner="Loading the model… (a GGUF file is converted once: ~30 s)",
                   max_entries=4)
def get_model(spec: str, device: str = "auto"):
    """The loaded model for ``spec``, shared by every session."""
    return model.load(spec, device=device)


@st.cache_data(show_spinner="Running the model and capturing attention…", max_entries=16)
def get_trace(spec: str, device: str, text: str, target: str | None = None) -> model.AttentionTrace:
    """The attention trace of ``text`` (and ``target``) under ``spec``."""
    return get_model(spec, device).trace(text, target=target)
