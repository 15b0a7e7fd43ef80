"""All Streamlit caching: models with ``st.cache_resource``, traces and the slow analyses of a
trace with ``st.cache_data``, keyed on what was traced (a :class:`~app_pages.common.RunKey`)."""

from __future__ import annotations

import streamlit as st

import model
import viz
from model.analysis.rollout import rollout
from model.analysis.statistics import head_stats


@st.cache_resource(show_spinner="Loading the model… (a GGUF file is converted once: ~30 s)",
                   max_entries=4)
def get_model(spec: str, device: str = "auto") -> model.LoadedModel:
    """The loaded model for ``spec``, shared by every session."""
    return model.load(spec, device=device)


@st.cache_data(show_spinner="Running the model and capturing attention…", max_entries=16)
def get_trace(spec: str, device: str, text: str, target: str | None = None) -> model.AttentionTrace:
    """The attention trace of ``text`` (and ``target``) under ``spec``."""
    return get_model(spec, device).trace(text, target=target)


@st.cache_data(show_spinner="Computing every head's statistics…", max_entries=16)
def get_head_stats(key: tuple, name: str) -> dict:
    """:func:`model.analysis.statistics.head_stats` of the run's trace (slow for long inputs:
    every head)."""
    return head_stats(get_trace(*key), name)


@st.cache_data(show_spinner="Rolling attention out through the layers…", max_entries=16)
def get_rollout(key: tuple, name: str):
    """:func:`model.analysis.rollout.rollout` of the run's trace."""
    return rollout(get_trace(*key), name)


@st.cache_data(show_spinner="Drawing every layer and head…", max_entries=16)
def get_model_view(key: tuple, name: str) -> dict:
    """The model-view figure of the run's trace as a plain dict (every head computed and
    pooled once).

    A dict, not a ``go.Figure``: an unpickled Figure serialises its layout keys in another
    order than the original, so the chart's element id changed between the first run and the
    next, and the click that caused the next run lost its selection.
    """
    return viz.model_view(get_trace(*key), name).to_dict()
