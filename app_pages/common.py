"""Sidebar settings shared by every page, kept in ``st.session_state``."""

from __future__ import annotations

import streamlit as st

import model

DEFAULT_MODEL = "own-random"
DEFAULT_TEXT = "The cat sat on the mat"
DEVICES = ("auto", "cpu", "cuda")


def sidebar() -> None:
    """Draw the shared sidebar: model and device."""
    with st.sidebar:
        st.selectbox("Model", model.BUNDLED, key="model_spec",
                     index=model.BUNDLED.index(DEFAULT_MODEL),
                     help="own-random: the seed's default encoder-decoder with random weights "
                          "(fixed seed); its vocabulary is built from your text.")
        st.radio("Device", DEVICES, key="device", horizontal=True,
                 help="auto runs on CUDA when this machine has a GPU, else on the CPU.")


def settings() -> tuple[str, str]:
    """The chosen ``(model spec, device)``."""
    return (st.session_state.get("model_spec", DEFAULT_MODEL),
            st.session_state.get("device", "auto"))
