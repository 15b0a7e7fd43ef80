"""Widgets that survive their options changing.

A browser (or the session) can hold a widget's old value after its options change: another
model has fewer heads or no encoder, another text fewer tokens or steps. Before drawing, each
wrapper here replaces a remembered value its new options do not hold with a valid one (the
default, the values still offered, or the nearest end of a range). Writing it through session
state, rather than forgetting it, makes Streamlit send the new value to the browser, which would
otherwise keep showing the old one.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def _holds(options: Sequence, value) -> bool:
    try:
        return value in options
    except TypeError:  # an unhashable or incomparable leftover
        return False


def _replace_invalid(key: str, options: Sequence, default) -> None:
    if key in st.session_state and not _holds(options, st.session_state[key]):
        st.session_state[key] = default


def selectbox(label: str, options, *, key: str, container=st, index: int = 0, **kwargs):
    """``st.selectbox`` whose remembered value falls back to ``options[index]`` when the
    options lost it."""
    options = list(options)
    index = min(index, max(len(options) - 1, 0))
    if options:
        _replace_invalid(key, options, options[index])
    return container.selectbox(label, options, index=index, key=key, **kwargs)


def radio(label: str, options, *, key: str, container=st, index: int = 0, **kwargs):
    """``st.radio`` whose remembered value falls back to ``options[index]``."""
    options = list(options)
    if options:
        _replace_invalid(key, options, options[index])
    return container.radio(label, options, index=index, key=key, **kwargs)


def select_slider(label: str, options, value, *, key: str, container=st, **kwargs):
    """``st.select_slider`` (one value or a range) whose remembered value falls back to
    ``value`` unless every end of it is still an option."""
    options = list(options)
    if key in st.session_state:
        remembered = st.session_state[key]
        is_range = isinstance(value, tuple)
        ends = tuple(remembered) if isinstance(remembered, list | tuple) else (remembered,)
        if is_range != isinstance(remembered, list | tuple) or not all(
                _holds(options, end) for end in ends):
            st.session_state[key] = value
    return container.select_slider(label, options, value, key=key, **kwargs)


def multiselect(label: str, options, *, key: str, default=(), container=st, **kwargs):
    """``st.multiselect`` that keeps the remembered values ``options`` still offers."""
    options = list(options)
    default = [v for v in default if _holds(options, v)]
    if key in st.session_state:
        remembered = st.session_state[key]
        if not isinstance(remembered, list | tuple):
            st.session_state[key] = default
        elif not all(_holds(options, v) for v in remembered):
            st.session_state[key] = [v for v in remembered if _holds(options, v)]
    return container.multiselect(label, options, default=default, key=key, **kwargs)


def slider(label: str, min_value, max_value, value, *, key: str, container=st, **kwargs):
    """``st.slider`` (one value or a range) whose remembered value is moved into the new range
    (a range keeps its order; a value of the wrong shape falls back to ``value``)."""
    if key in st.session_state:
        remembered = st.session_state[key]
        is_range = isinstance(value, tuple)
        try:
            if is_range != isinstance(remembered, list | tuple):
                raise TypeError
            values = tuple(remembered) if is_range else (remembered,)
            clamped = tuple(min(max(v, min_value), max_value) for v in values)
        except TypeError:
            st.session_state[key] = value
        else:
            if clamped != values:
                st.session_state[key] = clamped if is_range else clamped[0]
    return container.slider(label, min_value, max_value, value, key=key, **kwargs)
