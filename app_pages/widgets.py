"""Widgets that survive their options changing.

A browser (or the session) can hold a widget's old value after its options change: another
model has fewer heads, another text fewer tokens or steps. Before drawing, each wrapper here
forgets a remembered value its new options do not hold, so the widget falls back to its
default instead of returning something out of range.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def _forget(key: str) -> None:
    if key in st.session_state:
        del st.session_state[key]


def _holds(options: Sequence, value) -> bool:
    try:
        return value in options
    except TypeError:  # an unhashable or incomparable leftover
        return False


def selectbox(label: str, options, *, key: str, container=st, index: int = 0, **kwargs):
    """``st.selectbox`` whose remembered value is dropped when ``options`` lost it."""
    options = list(options)
    if key in st.session_state and not _holds(options, st.session_state[key]):
        _forget(key)
    return container.selectbox(label, options, index=min(index, max(len(options) - 1, 0)),
                               key=key, **kwargs)


def multiselect(label: str, options, *, key: str, default=(), container=st, **kwargs):
    """``st.multiselect`` that keeps only remembered values ``options`` still holds."""
    options = list(options)
    if key in st.session_state:
        remembered = st.session_state[key]
        if not isinstance(remembered, list | tuple) or not all(
                _holds(options, v) for v in remembered):
            _forget(key)
    default = [v for v in default if _holds(options, v)]
    return container.multiselect(label, options, default=default, key=key, **kwargs)


def slider(label: str, min_value, max_value, value, *, key: str, container=st, **kwargs):
    """``st.slider`` (one value or a range) whose remembered value must lie in the new range."""
    if key in st.session_state:
        remembered = st.session_state[key]
        values = remembered if isinstance(remembered, list | tuple) else (remembered,)
        shape_ok = isinstance(value, tuple) == isinstance(remembered, list | tuple)
        try:
            inside = all(min_value <= v <= max_value for v in values)
        except TypeError:
            inside = False
        if not (shape_ok and inside):
            _forget(key)
    return container.slider(label, min_value, max_value, value, key=key, **kwargs)


def radio(label: str, options, *, key: str, container=st, index: int = 0, **kwargs):
    """``st.radio`` whose remembered value is dropped when ``options`` lost it."""
    options = list(options)
    if key in st.session_state and not _holds(options, st.session_state[key]):
        _forget(key)
    return container.radio(label, options, index=index, key=key, **kwargs)


def select_slider(label: str, options, value, *, key: str, container=st, **kwargs):
    """``st.select_slider`` whose remembered value must be one of ``options``."""
    options = list(options)
    if key in st.session_state and not _holds(options, st.session_state[key]):
        _forget(key)
    return container.select_slider(label, options, value, key=key, **kwargs)
