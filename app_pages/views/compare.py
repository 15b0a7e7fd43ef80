"""Compare: two sentences (a minimal pair) under one model, one sentence under two models, and
the own translator's cross-attention at stages of its training.

The panels (A, B and their difference; the two models) stand side by side where each gets at
least :data:`PANEL_PX` of the page, and one under another where it would not (at 1024 px with
the sidebar open, three abreast were 65 px of cells each). Streamlit does not tell a page how
wide it is, so the browser lays them out: a flex rule on the panels' keyed containers
(:func:`_layout`). Each mode returns instead of stopping once its boxes are drawn, so that the
link the frame writes after the page always carries them.
"""

from __future__ import annotations

import html

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
from app_pages.frame.run import Run, RunKey, random_weights_note, single_vector_note
from app_pages.frame.settings import (
    DEFAULT_TEXT,
    initial,
    kind_name,
    presenting,
    settings,
    within,
)
from app_pages.frame.sink import SINK, sink_drawn, sink_toggle
from i18n import N_, _
from model import BUNDLED, Family
from model.analysis.cuts import shared_ceiling, stage_weights
from model.meta import CAUSAL_KINDS, LAST_STATE
from viz.compare import heads_difference
from viz.sizes import HEAD_SIDE, PROJECTOR_CHART_PX, SCREEN_CHART_PX

MODES = {"sentences": N_("Two sentences"), "models": N_("Two models"),
         "stages": N_("Training stages")}
# The example pairs, chosen so that their tokens line up under each bundled model's own
# tokenizer (tests/app/test_compare.py checks them with the real ones), one word changed. An
# encoder reads the whole sentence, so a word after "it" can change where "it" looks (hungry:
# the dog; scared: the cat); a causal decoder's "it" sees only the words before it, so its
# pair changes one of those.
ENCODER_PAIR = ("the dog chased the cat because it was hungry",
                "the dog chased the cat because it was scared")
CAUSAL_PAIR = ("the dog chased the cat because it was hungry",
               "the dog chased the bird because it was hungry")
EXAMPLE_PAIRS = {Family.ENCODER_ONLY: ENCODER_PAIR, Family.ENCODER_DECODER: ENCODER_PAIR,
                 Family.DECODER_ONLY: CAUSAL_PAIR}
EXAMPLE = "_cmp_example"  # the example pair this page last put in the sentence boxes
ENCODER = "minilm"  # the bundled encoder offered when a causal model cannot change a row
RANKED_TOKENS = 256  # longest input whose heads are all compared (every layer and head)
STAGE_CHARS = 500  # the training stages' sentence and target (own-translator's short sentences)
SUBTITLE_CHARS = 70  # the most of a sentence written under its heatmap's title
# The narrowest a panel (a heatmap, its labels and colour bar) and a sentence box are drawn
# side by side: narrower, they stand one under another, each as wide as the page.
PANEL_PX = 460
BOX_PX = 360
PANEL_GAP_PX = 16  # between two panels (the containers' gap, "small": 1rem)
PANELS, BOXES = "cmp_panels", "cmp_boxes"  # the keys of their containers


def _layout() -> None:
    """The flex rule that lays the panels and the boxes out by the width the browser has: each
    child of the keyed containers (Streamlit's ``st-key-`` classes) grows from its narrowest
    width, and wraps onto a row of its own below it."""
    rule = "{{flex: 1 1 {px}px; min-width: min({px}px, 100%);}}"
    st.html("<style>" + "".join(f".st-key-{key} > div {rule.format(px=px)}"
                                for key, px in ((PANELS, PANEL_PX), (BOXES, BOX_PX)))
            + "</style>")


def _share(panels: int) -> float:
    """The part of the page's width each of ``panels`` panels gets where charts are fitted (a
    1024 px screen: one under another; a projector in presentation mode: side by side), as
    :func:`_layout`'s rule lays them out."""
    page = PROJECTOR_CHART_PX if presenting() else SCREEN_CHART_PX
    return 1 / max(1, min(panels, int((page + PANEL_GAP_PX) // (PANEL_PX + PANEL_GAP_PX))))


def _model(spec: str, device: str):
    with explained_errors(_("Could not load {model}: ").format(model=spec[:80])):
        return get_model(spec, device)


def _trace(spec: str, device: str, text: str, target: str | None = None) -> Run | None:
    """The run of ``text`` under ``spec``; None (and a message) when the text is empty."""
    loaded = _model(spec, device)
    if not text.strip():
        st.info(_("Type a sentence to compare."))
        return None
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


def _subtitle(sentence: str) -> str:
    """A sentence as a line under its heatmap's title (cut, and safe for Plotly's markup)."""
    cut = sentence if len(sentence) <= SUBTITLE_CHARS else sentence[:SUBTITLE_CHARS - 1] + "…"
    return f"<br><sup>{html.escape(cut, quote=False)}</sup>"


def _head(run: Run, name: str, layer: int, head: int, title: str, zmax: float = 1.0):
    trace = run.trace
    q_tokens, k_tokens = trace.axes(name)
    weights, factors = _pooled_head(run, name, layer, head)
    sunk = sink_drawn(bool(st.session_state.get(SINK, False)), weights,
                      trace.mask(name, layer), factors, str(k_tokens[0]))
    return viz.attention_heatmap(
        sunk.weights, list(q_tokens), list(k_tokens), allowed=trace.mask(name, layer),
        title=title + (f"<br><sup>{sunk.short}</sup>" if sunk.short else ""),
        special=trace.special(name), factors=factors, max_side=HEAD_SIDE,
        zmax=sunk.zmax or zmax)


def _layer_head(trace, name: str, prefix: str, container=st) -> tuple[int, int]:
    c1, c2 = container.columns(2)
    layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key=f"{prefix}_layer",
                              container=c1)
    head = widgets.selectbox(_("Head"), range(trace.n_heads), key=f"{prefix}_head",
                             container=c2)
    return layer, head


def _fill_examples(pair: tuple[str, str]) -> None:
    """Put this model's example ``pair`` in the sentence boxes on a first visit, and again when
    the model changed while the boxes still held the example put there for the model before;
    a pair typed, or brought by a link, is kept. (Written before the boxes are drawn, so that
    the link after the page carries them from the first visit on.)"""
    state = st.session_state
    shown = (state.get("cmp_a"), state.get("cmp_b"))
    untouched = state.get(EXAMPLE) is not None and shown == tuple(state[EXAMPLE])
    if untouched or ("cmp_a" not in state and "cmp_b" not in state):
        state["cmp_a"], state["cmp_b"] = pair
        state[EXAMPLE] = pair
        return
    for key, text in zip(("cmp_a", "cmp_b"), pair):  # one box a link left out
        if key not in state:
            state[key] = text


def unchanged_rows(trace_a, trace_b, name: str) -> int:
    """How many rows of ``name`` cannot differ between the two sentences: under a decoder-only
    model's causal attention a token sees only itself and the tokens before it, so every row
    before the first token that differs is the same in A and B (0 for any other model, or when
    the first token differs)."""
    if Family(trace_a.family) is not Family.DECODER_ONLY or name not in CAUSAL_KINDS:
        return 0
    tokens_a, tokens_b = ([str(t) for t in trace.axes(name)[0]] for trace in (trace_a, trace_b))
    if tokens_a == tokens_b:
        return 0
    return next((i for i, (a, b) in enumerate(zip(tokens_a, tokens_b)) if a != b),
                min(len(tokens_a), len(tokens_b)))


def _shown_tokens(tokens) -> str:
    """Tokens as a message names them (``the · dog · …``), the middle of a long run left out."""
    words = [str(t).strip() or str(t) for t in tokens]
    if len(words) > 10:
        words = [*words[:4], "…", *words[-4:]]
    return literal(" · ".join(words))


def _choose_encoder() -> None:
    st.session_state["model_choice"] = ENCODER


def _causal_note(spec: str, trace_a, trace_b, name: str) -> None:
    """Say which rows a causal model cannot change (the rows of the tokens before the first
    change, "it" among them when the changed word comes after it), and offer an encoder."""
    same = unchanged_rows(trace_a, trace_b, name)
    special = set(trace_a.special(name)[0])
    if not any(i not in special for i in range(same)):  # none, or only a <bos>
        return
    tokens_a, tokens_b = (trace.axes(name)[0] for trace in (trace_a, trace_b))
    change = " → ".join(f"“{str(tokens[same]).strip()}”" for tokens in (tokens_a, tokens_b)
                        if same < len(tokens))
    st.info(_("**{model} reads left to right** (a causal mask): each token attends only to "
              "itself and the tokens before it, so the rows of {tokens}, before the first "
              "change ({change}), cannot differ between A and B. An encoder such as {encoder} "
              "reads the whole sentence: there a later word can change them too.").format(
        model=literal(spec), tokens=_shown_tokens(tokens_a[:same]), change=literal(change),
        encoder=ENCODER), icon=":material/arrow_forward:")
    if spec != ENCODER:
        st.button(_("Compare under {encoder}").format(encoder=ENCODER), key="cmp_encoder",
                  on_click=_choose_encoder, icon=":material/swap_horiz:")


def _sentences() -> None:
    spec, device = settings()
    if not spec:
        st.info(_("Type a Hugging Face hub id or a local checkpoint path in the sidebar."))
        return
    st.caption(_("Two sentences under {model}, one layer and head. When their tokens line up "
                 "(one word changed for another), their difference is drawn and every head is "
                 "ranked by how much its attention changes.").format(model=literal(spec)))
    loaded = _model(spec, device)
    _fill_examples(EXAMPLE_PAIRS.get(loaded.family, ENCODER_PAIR))
    boxes = st.container(horizontal=True, key=BOXES)
    first = boxes.text_input(_("Sentence A"), key="cmp_a")
    second = boxes.text_input(_("Sentence B"), key="cmp_b")
    random_weights_note(spec)
    with explained_errors():
        first, second = (within(text, limits().max_chars, what) for text, what in (
            (first, _("sentence A")), (second, _("sentence B"))))
    run_a = _trace(spec, device, first)
    run_b = None if run_a is None else _trace(spec, device, second)
    if run_b is None:
        return
    trace_a, trace_b = run_a.trace, run_b.trace
    single_vector_note(trace_a)
    name = kind_selector(trace_a, key="cmp_kind")
    layer, head = _layer_head(trace_a, name, "cmp")
    _causal_note(spec, trace_a, trace_b, name)
    title = _("{name} · layer {layer} · head {head}").format(name=kind_name(name), layer=layer,
                                                             head=head)
    zmax = _ceiling([run_a, run_b], name, layer)
    panels = st.container(horizontal=True, key=PANELS)
    for run, letter, sentence in ((run_a, "A", first), (run_b, "B", second)):
        chart(_head(run, name, layer, head, f"{letter} · {title}{_subtitle(sentence)}", zmax),
              key=f"cmp_{letter.lower()}_heatmap", share=_share(3),
              container=panels.container(key=f"cmp_panel_{letter.lower()}"),
              name=("compare", letter, name, f"layer {layer}", f"head {head}"))
    (qa, ka), (qb, kb) = trace_a.axes(name), trace_b.axes(name)
    if (len(qa), len(ka)) != (len(qb), len(kb)):
        st.info(_("A has {a_q} × {a_k} tokens and B {b_q} × {b_k} for {name}: their rows do not "
                  "line up, so they are compared side by side only. Change one word for "
                  "another of as many tokens to see the difference.").format(
            a_q=len(qa), a_k=len(ka), b_q=len(qb), b_k=len(kb), name=kind_name(name)))
        return
    (pooled_a, factors), (pooled_b, _factors) = (_pooled_head(run, name, layer, head)
                                                 for run in (run_a, run_b))
    allowed = trace_a.mask(name, layer) & trace_b.mask(name, layer)
    chart(heads_difference(
        pooled_a, pooled_b, (qa, qb), (ka, kb), factors=factors, allowed=allowed,
        title=_("B − A · {title}").format(title=title),
        subtitle=_("red: B attends more; blue: less; white: unchanged") if allowed.all() else
        _("red: B attends more; blue: less; white: unchanged; grey: masked")),
        key="cmp_difference", share=_share(3),
        container=panels.container(key="cmp_panel_difference"),
        name=("compare", "difference", name, f"layer {layer}", f"head {head}"))
    if trace_a.meta.get("capture") == LAST_STATE:  # no attention: nothing moves, none to rank
        return
    if max(len(qa), len(ka)) > RANKED_TOKENS:
        st.info(_("Heads are ranked for inputs of at most {most} tokens.").format(
            most=RANKED_TOKENS))
        return
    st.subheader(_("Heads ranked by how much they change"))
    changed = get_head_changes(spec, device, first, second, name)
    if not changed:
        st.success(_("No head changes: the two sentences give the same attention."))
        return
    st.caption(_("Divergence: the Jensen–Shannon divergence between a query's weights in A "
                 "and in B (0: the same, $\\ln 2 \\approx 0.693$: nothing in common), "
                 "averaged over queries. Largest: the largest change of one weight."))
    st.dataframe(pd.DataFrame(changed).rename(columns={
        "layer": _("layer"), "head": _("head"), "divergence": _("divergence"),
        "largest": _("largest change")}), hide_index=True, key="cmp_ranked")


def _models() -> None:
    st.caption(_("One sentence under two models, side by side: each with its own tokens, "
                 "layers and heads."))
    spec, device = settings()
    if not spec:
        st.info(_("Type a Hugging Face hub id or a local checkpoint path in the sidebar."))
        return
    text = st.text_input(_("Sentence"), **initial("cmp_text", DEFAULT_TEXT), key="cmp_text")
    with explained_errors():
        text = within(text, limits().max_chars, _("the sentence"))
    other = widgets.selectbox(_("Second model"), [m for m in BUNDLED if m != spec],
                              index=0, key="cmp_model_b")
    if not text.strip():
        st.info(_("Type a sentence to compare."))
        return
    panels = st.container(horizontal=True, key=PANELS)
    for model_spec, prefix in ((spec, "cmp_ma"), (other, "cmp_mb")):
        column = panels.container(key=f"{prefix}_panel")
        column.markdown(f"**{literal(model_spec)}**")
        with column:
            run = _trace(model_spec, device, text)
        single_vector_note(run.trace, column)
        name = kind_selector(run.trace, container=column, key=f"{prefix}_kind")
        layer, head = _layer_head(run.trace, name, prefix, container=column)
        zmax = _ceiling([run], name, layer, container=column)
        chart(_head(run, name, layer, head, f"{model_spec} · " + _(
            "{name} · layer {layer} · head {head}").format(name=kind_name(name), layer=layer,
                                                           head=head),
            zmax), key=f"{prefix}_heatmap", container=column, share=_share(2),
            name=("compare", model_spec, name, f"layer {layer}", f"head {head}"))


def _stages() -> None:
    st.caption(_("own-translator's cross-attention at stages of a recorded run of its "
                 "training, on the same sentence and target: at step 0 (random weights) it is "
                 "spread evenly; step by step each Chinese word learns which English word it "
                 "translates."))
    from model.own.translator import training_stages

    stages = training_stages()
    if not stages:
        st.info(_("No training stages are kept here: `python -m model.own.train` records them."))
        return
    boxes = st.container(horizontal=True, key=BOXES)
    source = boxes.text_input(_("English sentence"),
                              **initial("cmp_stage_source", "the cat sat on the mat"),
                              key="cmp_stage_source")
    target = boxes.text_input(_("Chinese target (words separated by spaces)"),
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
        title=_("{name} · layer {layer} · {head}").format(
            name=kind_name(name), layer=layer,
            head=_("mean of the heads") if head < 0 else _("head {head}").format(
                head=head))), key="cmp_stages", name=("compare", "stages", f"layer {layer}"))
    st.caption(_("Rows: the Chinese word being written (the decoder reads the word before it). "
                 "Columns: the English words. Each panel is one stage of the same run; its last "
                 "stage is that run's trained model. The app's own-translator came from an "
                 "earlier run of the same recipe, so its weights differ slightly from this "
                 "run's."))


st.title(_("Compare"))
_layout()
mode = widgets.radio(_("Compare"), list(MODES), key="cmp_mode", horizontal=True,
                     format_func=lambda m: _(MODES[m]), label_visibility="collapsed")
if mode != "stages":  # the two heads drawn side by side, each with the sink left out
    sink_toggle()
{"sentences": _sentences, "models": _models, "stages": _stages}[mode]()
