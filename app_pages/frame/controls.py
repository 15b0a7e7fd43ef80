"""Controls several pages share: the attention kind, the metric, a window of tokens, a step
stepper, opening a head in Explore, and the analysis-length check."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import limits
from app_pages.cache.limits import check_analysis
from app_pages.frame import widgets
from app_pages.frame.classroom import STEPPER, keys_caption
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.run import Run
from app_pages.frame.settings import kind_label
from i18n import N_, _


def self_attention_kinds(trace, page: str, why: str = "") -> list[str]:
    """The trace's self-attention kinds; where it has none (a recurrent translator: its one
    attention is cross-attention), a note saying that ``page`` (its title, in the current
    language) needs them and where that model's attention is shown, ``why`` after it, and the
    page stops."""
    kinds = [name for name in trace.names if name.endswith(".self")]
    if not kinds:
        st.info(_("{page} reads self-attention, and {model} has none: a recurrent translator "
                  "reads one word per step and carries a state instead. Its one attention, the "
                  "decoder's cross-attention, is on Explore, Translate and Compare; lesson 3.6 "
                  "sets it beside the Transformer.").format(page=page, model=literal(trace.model))
                + (" " + why if why else ""), icon=":material/repeat:")
        st.stop()
    return kinds


def kind_selector(trace, container=st, key: str = "kind", kinds=None) -> str:
    """A select box of the trace's attention kinds, each named in the lesson's words
    (:func:`~app_pages.frame.settings.kind_label`); returns the kind's name
    (``"encoder.self"``)."""
    kinds = kinds or trace.names
    return widgets.selectbox(_("Attention"), kinds, key=key, container=container,
                             format_func=kind_label)


# The head statistics' names as shown (the keys of model.analysis.statistics.STATS, and the
# corpus table's span column).
METRIC_NAMES = {"entropy": N_("entropy"), "distance": N_("distance"),
                "first_token": N_("first_token"), "previous_token": N_("previous_token"),
                "self": N_("self"), "span": N_("span attention")}


def metric_name(metric: str) -> str:
    """A metric's name in the current language."""
    return _(METRIC_NAMES[metric]) if metric in METRIC_NAMES else metric


# Explore outlines a cell another page asked for: ``open_head`` = (kind, layer, head, (query,
# key, query label, key label[, origin])); the origin says which page asked (None: the lesson
# "3.4 Who looks at whom", which finds pairs).
FROM_MOVES = "what_moves"  # What moves' query-key map: the clicked query's largest weight


def open_head(name: str, layer: int, head: int) -> None:
    """Show one head in the Explore page."""
    st.session_state["open_head"] = (name, layer, head)
    st.switch_page(script("explore"))


def window_selector(n_tokens: int, limit: int, key: str) -> tuple[int, int]:
    """A token window ``(start, stop)`` of at most ``limit`` tokens for long inputs."""
    if n_tokens <= limit:
        return 0, n_tokens
    start = widgets.slider(_("Window start (the input has {count} tokens; {limit} are "
                             "shown)").format(count=n_tokens, limit=limit),
                           0, n_tokens - limit, 0, key=key)
    return start, start + limit


def bounded_analysis(run: Run, name: str, what: str) -> None:
    """Stop the page with a message when the trace is longer than this server's analyses of
    every head read (``what``: the analysis, e.g. "Head statistics")."""

    with explained_errors():
        check_analysis(max(run.trace.axes(name)[0].size, run.trace.axes(name)[1].size),
                       limits().analysis_tokens, what)


def stepper(label: str, n_steps: int, *, key: str, default: int = 1, container=st,
            help: str | None = None, lesson: bool = False) -> int:
    """A step ``1..n_steps`` chosen with previous/next buttons beside a slider, or with the
    keys from anywhere on the page, for showing a view one step at a time in class; returns
    the step.

    Args:
        default: the step a fresh view opens at; the first, so that no step is given away
            before it is reached.
        lesson: the page is a lesson (in presentation mode the keys' caption says that they
            cross to the next and previous lesson).
    """

    def move(by: int) -> None:
        st.session_state[key] = min(max(int(st.session_state.get(key, default)) + by, 1),
                                    n_steps)

    if n_steps < 2:  # a slider needs two ends
        st.session_state[key] = 1
        return 1
    # the keys (← → PageUp PageDown Space, app_pages.frame.classroom) press these buttons
    box = container.container(key=f"{STEPPER}{key}")
    back, middle, forward = box.columns([1, 8, 1], vertical_alignment="bottom")
    step = widgets.slider(label, 1, n_steps, default, key=key, container=middle, help=help)
    back.button("", icon=":material/arrow_back:", key=f"{key}_back", on_click=move, args=(-1,),
                disabled=step <= 1, help=_("Previous step"), use_container_width=True)
    forward.button("", icon=":material/arrow_forward:", key=f"{key}_next", on_click=move,
                   args=(1,), disabled=step >= n_steps, help=_("Next step"),
                   use_container_width=True)
    with box:
        keys_caption(lesson=lesson)
    return step
