"""Compare: two sentences (a minimal pair) under one model, one sentence under two models, and
the own translator's cross-attention at stages of its training."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from app_pages.cache.getters import (
    get_head_changes,
    get_head_view,
    get_layer_summary,
    get_model,
    get_stage_trace,
    get_trace,
    limits,
)
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import kind_selector
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.run import Run, RunKey, random_weights_note
from app_pages.frame.settings import DEFAULT_TEXT, initial, settings, within
from i18n import N_, _
from model import BUNDLED
from model.analysis.cuts import shared_ceiling, stage_weights
from viz.compare import heads_difference
from viz.sizes import HEAD_SIDE

MODES = {"sentences": N_("Two sentences"), "models": N_("Two models"),
         "stages": N_("Training stages")}
PAIR = ("the cat sat on the mat because it was tired",
        "the dog sat on the sofa because it was tired")
RANKED_TOKENS = 256  # longest input whose heads are all compared (every layer and head)
STAGE_CHARS = 500  # the training stages' sentence and target (own-translator's short sentences)

st.title(_("Compare"))
mode = widgets.radio(_("Compare"), list(MODES), key="cmp_mode", horizontal=True,
                     format_func=lambda m: _(MODES[m]), label_visibility="collapsed")


def _trace(spec: str, device: str, text: str, target: str | None = None) -> Run:
    with explained_errors(_("Could not load {model}: ").format(model=spec[:80])):
        loaded = get_model(spec, device)
    if not text.strip():
        st.info(_("Type a sentence to compare."))
        st.stop()
    key = RunKey(spec, device, text, target)
    with explained_errors(describe=describe_error(spec)):
        return Run(key, loaded, get_trace(*key))


def _pooled_head(run: Run, name: str, layer: int, head: int) -> tuple:
    """One head as drawn, ``(weights, factors)``: exact up to :data:`viz.sizes.HEAD_SIDE`
    tokens a side, as in Explore, else pooled where the model ran (the figure stays as small as
    Explore's)."""
    with explained_errors():
        return get_head_view(run, name, layer, head, HEAD_SIDE)


def _ceiling(runs: list[Run], name: str, layer: int, container=st) -> float:
    """The weight drawn darkest in the heatmaps of ``runs`` (one scale for the heads compared,
    :func:`model.analysis.cuts.shared_ceiling`), as Explore fits long inputs; said under the
    charts when fitted. The layers' summaries are read only then."""
    def peaks() -> list[float]:
        with explained_errors():
            return [get_layer_summary(run, name, layer).peak for run in runs]

    zmax, fitted = shared_ceiling([run.trace for run in runs], name, peaks)
    if fitted:
        container.caption(_("Colours fitted to the layer: the darkest colour is its largest weight "
                            "away from the first token, {zmax:.3f}.").format(zmax=zmax))
    return zmax


def _head(run: Run, name: str, layer: int, head: int, title: str, zmax: float = 1.0):
    trace = run.trace
    q_tokens, k_tokens = trace.axes(name)
    weights, factors = _pooled_head(run, name, layer, head)
    return viz.attention_heatmap(
        weights, list(q_tokens), list(k_tokens), allowed=trace.mask(name, layer), title=title,
        special=trace.special(name), factors=factors, max_side=HEAD_SIDE, zmax=zmax)


def _layer_head(trace, name: str, prefix: str, container=st) -> tuple[int, int]:
    c1, c2 = container.columns(2)
    layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key=f"{prefix}_layer",
                              container=c1)
    head = widgets.selectbox(_("Head"), range(trace.n_heads), key=f"{prefix}_head",
                             container=c2)
    return layer, head


if mode == "sentences":
    st.caption(_("Two sentences under the same model, side by side for one layer and head. "
                 "When their tokens line up (a minimal pair: one word changed), the difference "
                 "is drawn and every head is ranked by how much its attention changes."))
    spec, device = settings()
    if not spec:
        st.info(_("Type a Hugging Face hub id or a local checkpoint path in the sidebar."))
        st.stop()
    random_weights_note(spec)
    c1, c2 = st.columns(2)
    first = c1.text_input(_("Sentence A"), **initial("cmp_a", PAIR[0]), key="cmp_a")
    second = c2.text_input(_("Sentence B"), **initial("cmp_b", PAIR[1]), key="cmp_b")
    with explained_errors():
        first, second = (within(text, limits().max_chars, what) for text, what in (
            (first, _("sentence A")), (second, _("sentence B"))))
    run_a, run_b = _trace(spec, device, first), _trace(spec, device, second)
    trace_a, trace_b = run_a.trace, run_b.trace
    name = kind_selector(trace_a, key="cmp_kind")
    layer, head = _layer_head(trace_a, name, "cmp")
    c1, c2 = st.columns(2)
    title = _("{name} · layer {layer} · head {head}").format(name=name, layer=layer, head=head)
    zmax = _ceiling([run_a, run_b], name, layer)
    chart(_head(run_a, name, layer, head, "A · " + title, zmax), key="cmp_a_heatmap",
          container=c1, name=("compare", "A", name, f"layer {layer}", f"head {head}"))
    chart(_head(run_b, name, layer, head, "B · " + title, zmax), key="cmp_b_heatmap",
          container=c2, name=("compare", "B", name, f"layer {layer}", f"head {head}"))
    (qa, ka), (qb, kb) = trace_a.axes(name), trace_b.axes(name)
    if (len(qa), len(ka)) != (len(qb), len(kb)):
        st.info(_("A has {a_q} × {a_k} tokens and B {b_q} × {b_k} for {name}: their rows do not "
                  "line up, so they are compared side by side only. Change one word for "
                  "another of as many tokens to see the difference.").format(
            a_q=len(qa), a_k=len(ka), b_q=len(qb), b_k=len(kb), name=name))
        st.stop()
    (pooled_a, factors), (pooled_b, _factors) = (_pooled_head(run, name, layer, head)
                                                 for run in (run_a, run_b))
    chart(heads_difference(
        pooled_a, pooled_b, (qa, qb), (ka, kb), factors=factors,
        title=_("B − A · {title}").format(title=title),
        subtitle=_("red: B attends more; blue: less; white: unchanged")),
        key="cmp_difference", name=("compare", "difference", name, f"layer {layer}",
                                    f"head {head}"))
    if max(len(qa), len(ka)) > RANKED_TOKENS:
        st.info(_("Heads are ranked for inputs of at most {most} tokens.").format(
            most=RANKED_TOKENS))
        st.stop()
    st.subheader(_("Heads ranked by how much they change"))
    changed = get_head_changes(spec, device, first, second, name)
    if not changed:
        st.success(_("No head changes: the two sentences give the same attention."))
    else:
        st.caption(_("Divergence: the Jensen–Shannon divergence between a query's weights in A "
                     "and in B (0: the same, $\\ln 2 \\approx 0.693$: nothing in common), "
                     "averaged over queries. Largest: the largest change of one weight."))
        st.dataframe(pd.DataFrame(changed).rename(columns={
            "layer": _("layer"), "head": _("head"), "divergence": _("divergence"),
            "largest": _("largest change")}), hide_index=True, height=280, key="cmp_ranked")

elif mode == "models":
    st.caption(_("One sentence under two models, side by side: each with its own tokens, "
                 "layers and heads."))
    spec, device = settings()
    text = st.text_input(_("Sentence"), **initial("cmp_text", DEFAULT_TEXT), key="cmp_text")
    with explained_errors():
        text = within(text, limits().max_chars, _("the sentence"))
    other = widgets.selectbox(_("Second model"), [m for m in BUNDLED if m != spec],
                              index=0, key="cmp_model_b")
    columns = st.columns(2)
    for column, model_spec, prefix in ((columns[0], spec, "cmp_ma"),
                                       (columns[1], other, "cmp_mb")):
        column.markdown(f"**{literal(model_spec)}**")
        run = _trace(model_spec, device, text)
        name = kind_selector(run.trace, container=column, key=f"{prefix}_kind")
        layer, head = _layer_head(run.trace, name, prefix, container=column)
        zmax = _ceiling([run], name, layer, container=column)
        chart(_head(run, name, layer, head, f"{model_spec} · " + _(
            "{name} · layer {layer} · head {head}").format(name=name, layer=layer, head=head),
            zmax), key=f"{prefix}_heatmap", container=column,
            name=("compare", model_spec, name, f"layer {layer}", f"head {head}"))

else:
    st.caption(_("own-translator's cross-attention at stages of a recorded run of its "
                 "training, on the same sentence and target: at step 0 (random weights) it is "
                 "spread evenly; step by step each Chinese word learns which English word it "
                 "translates."))
    from model.own.translator import training_stages

    stages = training_stages()
    if not stages:
        st.info(_("No training stages are kept here: `python -m model.own.train` records them."))
        st.stop()
    c1, c2 = st.columns(2)
    source = c1.text_input(_("English sentence"),
                           **initial("cmp_stage_source", "the cat sat on the mat"),
                           key="cmp_stage_source")
    target = c2.text_input(_("Chinese target (words separated by spaces)"),
                           **initial("cmp_stage_target", "猫 坐 在 垫子 上"),
                           key="cmp_stage_target")
    with explained_errors():
        source, target = (within(text, STAGE_CHARS, what) for text, what in (
            (source, _("the English sentence")), (target, _("the Chinese target"))))
    device = settings()[1]
    traces = []
    for step in stages:
        with explained_errors(describe=describe_error("own-translator")):
            traces.append(get_stage_trace(step, device, source, target or None))
    name = "decoder.cross"
    c1, c2 = st.columns(2)
    layer = widgets.selectbox(_("Layer"), range(traces[0].layers(name)), key="cmp_stage_layer",
                              index=traces[0].layers(name) - 1, container=c1)
    heads = [-1, *range(traces[0].n_heads)]
    head = widgets.selectbox(_("Head"), heads, key="cmp_stage_head", container=c2,
                             format_func=lambda h: _("mean of the heads") if h < 0 else str(h))
    weights = stage_weights(traces, name, layer, None if head < 0 else head)
    q_tokens, k_tokens = traces[0].axes(name)
    chart(viz.heads_grid(
        weights, list(q_tokens), list(k_tokens), cols=len(stages),
        titles=[_("step {step}").format(step=s) for s in stages],
        title=_("decoder.cross · layer {layer} · {head}").format(
            layer=layer, head=_("mean of the heads") if head < 0 else _("head {head}").format(
                head=head))), key="cmp_stages", name=("compare", "stages", f"layer {layer}"))
    st.caption(_("Rows: the Chinese word being written (the decoder reads the word before it). "
                 "Columns: the English words. Each panel is one stage of the same run; its last "
                 "stage is that run's trained model. The app's own-translator came from an "
                 "earlier run of the same recipe, so its weights differ slightly from this "
                 "run's."))
