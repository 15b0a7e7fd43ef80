"""Every result a page asks the server for, one getter each: models with ``st.cache_resource``;
traces and the slow analyses of a trace through :func:`memo` into the one
:class:`~app_pages.cache.shared.SharedCache`, keyed on what was traced (a
:class:`~app_pages.frame.run.RunKey`).

Traces are immutable, so every session and rerun is served the same object: nothing is copied
or unpickled per rerun (``st.cache_data`` would copy each time: 183 MB for a 2,000-token smollm2
trace). Long runs (a corpus, every layer of an analysis) take a slot for each batch or layer and
give it back in between, so that a short request asked meanwhile is served after one batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
import streamlit as st

import model
import viz
from app_pages.cache.limits import BudgetError, Limits, check_request, memory_guard
from app_pages.cache.shared import SharedCache
from app_pages.frame.errors import explained_errors
from i18n import _, language
from model.analysis.rollout import rollout
from model.analysis.statistics import head_stats, summary_of
from model.corpus.engine import corpus_table
from model.corpus.sentences import SentenceFile, SentenceLimits, columns, read_sentences
from model.corpus.statistics import Span, heads_by_change
from model.device import dtype_name, resolve_device, resolve_dtype
from model.lessons.scaling import dot_products, gradient_by_width, spread_by_width
from model.policy import LoadPolicy
from model.reading.blocks import LayerSummary, head_pooled, mean_pooled, region
from viz.numbers import rough_size
from viz.sizes import GRID_SIDE, TILE_SIDE


# (no spinner for these three: each is made at once, and the server's preload makes them off
# any page, where a spinner has nowhere to go)
@st.cache_resource(show_spinner=False)
def limits() -> Limits:
    """The operator's limits (environment variables, read once per server), with the defaults
    of where the server listens: loopback (one user's machine) or a classroom."""
    return Limits.from_env(st.get_option("server.address"))


@st.cache_resource(show_spinner=False)
def policy() -> LoadPolicy:
    """The operator's load policy for this server's address (read once per server)."""
    return LoadPolicy.from_env(st.get_option("server.address"))


@st.cache_resource(show_spinner=False)
def shared_cache() -> SharedCache:
    """The one cache of traces and analyses of this server."""
    bounds = limits()
    return SharedCache(bounds.trace_cache_bytes, bounds.concurrent_runs)


def get_model(spec: str, device: str = "auto", dtype: str = "auto") -> model.LoadedModel:
    """The loaded model for ``spec`` on ``device`` in ``dtype``, shared by every session;
    ``auto`` is resolved first, so that ``auto`` and what it means share one copy."""
    device = str(resolve_device(device))
    return _loading_model(spec.strip(), device, _precision(dtype, device))


def load_model(spec: str, device: str = "auto", dtype: str = "auto") -> model.LoadedModel:
    """:func:`get_model` outside a page (no spinner): the server's preload
    (:mod:`app_pages.cache.preload`)."""
    device = str(resolve_device(device))
    return _kept(spec.strip(), device, _precision(dtype, device))


def _precision(dtype: str, device: str) -> str:
    """``dtype``'s name, ``auto`` resolved for ``device``."""
    return dtype_name(resolve_dtype(dtype, device))


def _loading_model(spec: str, device: str, dtype: str) -> model.LoadedModel:
    with st.spinner(_("Loading the model… (a GGUF file is converted once: ~30 s)")):
        return _kept(spec, device, dtype)


def _kept(spec: str, device: str, dtype: str) -> model.LoadedModel:
    """The model from the cache of models (loaded first if it is not there), noted as loaded."""
    loaded_model = _load(spec, device, dtype)
    _LOADED.add((spec, device, dtype))
    return loaded_model


@st.cache_resource(show_spinner=False, max_entries=4)
def _load(spec: str, device: str, dtype: str) -> model.LoadedModel:
    rules = policy()
    # One model loads at a time: transformers builds models on the meta device by patching
    # torch globally, which two loads in two sessions' threads must not do at once.
    with _LOADING:
        return model.load(spec, device=device, trust_remote_code=rules.trust_remote_code,
                          policy=rules, dtype=dtype)


_LOADING = threading.Lock()
# The (spec, device, dtype) this server has loaded, for a page or as it started
# (:mod:`app_pages.cache.preload`). One dropped since from the models kept (the fifth loaded)
# stays listed: a page asking for it again shows get_model's spinner, not get_models's box.
_LOADED: set[tuple[str, str, str]] = set()


def loaded(spec: str, device: str = "auto", dtype: str = "auto") -> bool:
    """Whether this server has loaded ``spec`` on ``device`` in ``dtype`` (a page that shows
    it need not wait, nor ask the user to load it)."""
    device = str(resolve_device(device))
    return (spec.strip(), device, _precision(dtype, device)) in _LOADED


def get_models(specs: Iterable[str], device: str = "auto", dtype: str = "auto") -> None:
    """Load the models of ``specs`` this server has not loaded yet, one after another (one
    model loads at a time), in a box that names the one loading and how long each took; the
    box stays, collapsed, for the run that loaded them. A model that cannot load is left to
    the page, which says why where it asks for it (:func:`get_model`)."""
    device = str(resolve_device(device))
    dtype = _precision(dtype, device)
    waiting = [spec for spec in dict.fromkeys(spec.strip() for spec in specs)
               if (spec, device, dtype) not in _LOADED]
    if not waiting:
        return
    def loading(number: int) -> str:
        return _("Loading {model} ({number} of {total})…").format(
            model=waiting[number - 1], number=number, total=len(waiting))

    started = time.perf_counter()
    done = []
    with st.status(loading(1), expanded=True) as box:
        for number, spec in enumerate(waiting, start=1):
            box.update(label=loading(number))
            began = time.perf_counter()
            try:
                _kept(spec, device, dtype)
            except Exception:  # the page says why, where it asks for the model
                st.write(_("{model} could not be loaded.").format(model=spec))
                continue
            done.append(spec)
            st.write(_("{model} loaded in {seconds:.1f} s.").format(
                model=spec, seconds=time.perf_counter() - began))
        failed = [spec for spec in waiting if spec not in done]
        if failed:
            box.update(label=_("Could not load {models}: the page says why.").format(
                models=", ".join(failed)), state="error", expanded=False)
        else:
            box.update(label=_("Loaded {models} in {seconds:.1f} s.").format(
                models=", ".join(done), seconds=time.perf_counter() - started),
                state="complete", expanded=False)


def memo(key: tuple, what: str, compute: Callable[[], Any], *, spinner: str | None = None,
         readonly: bool = True, slot: bool = True) -> Any:
    """What every getter of a shared result does: ``compute()`` once through the shared cache
    under ``key`` (whose first item names the kind of result), for every session.

    Args:
        key: the cache's key, ``(kind, ...what it was computed from)``.
        what: what is being done, for the message if the server runs out of memory
            (:func:`~app_pages.cache.limits.memory_guard`).
        compute: makes the result; it runs in one of the server's slots unless ``slot`` is
            false (a computation that takes a slot per batch itself).
        spinner: shown while it runs (none: the page shows its own progress, or it is quick).
        readonly: make the result's numpy arrays read-only (shared results must not change).
    """
    cache = shared_cache()
    found, value = cache.peek(key)
    if found:
        return value

    def guarded():
        with memory_guard(what):
            result = compute()
        return _readonly(result) if readonly else result

    with st.spinner(spinner) if spinner else nullcontext():
        return cache.get(key, guarded, slot=slot)


@contextmanager
def heavy_work(what: str) -> Iterator[None]:
    """A page's own computation on a trace (every head of a layer, a window's panels) in one of
    the server's worker slots, running out of memory explained on the page."""

    with explained_errors(), shared_cache().slot(), memory_guard(what):
        yield


def get_trace(spec: str, device: str, text: str, target: str | None = None,
              dtype: str = "auto", *, quiet: bool = False) -> model.AttentionTrace:
    """The attention trace of ``text`` (and ``target``) under ``spec``, shared by every session
    (traces are immutable); a text over the server's memory limit is refused first
    (:class:`~app_pages.cache.limits.BudgetError`). ``quiet``: no spinner (outside a page:
    the server's preload)."""
    device = str(resolve_device(device))
    dtype = _precision(dtype, device)

    def trace() -> model.AttentionTrace:
        loaded = load_model(spec, device, dtype) if quiet else get_model(spec, device, dtype)
        # refused before the model runs when the text needs more than a request may
        check_request(loaded, loaded.count_tokens(text, target), limits().request_bytes)
        return loaded.trace(text, target=target)

    return memo(trace_key(spec, device, text, target, dtype), _("tracing the text"), trace,
                spinner=None if quiet else _("Running the model and capturing attention…"),
                readonly=False)


def trace_key(spec: str, device: str, text: str, target: str | None = None,
              dtype: str = "auto") -> tuple:
    """The shared cache's key of :func:`get_trace`'s trace (``auto`` resolved)."""
    device = str(resolve_device(device))
    return ("trace", spec, device, _precision(dtype, device), text, target)


def get_generation(spec: str, device: str, text: str, new_tokens: int | None = None):
    """The model's greedy generation of ``text`` with its KV cache measured at every step
    (:class:`model.interface.Generation`), shared by every session."""
    model_ = get_model(spec, device)
    return memo(("generation", spec, str(model_.device), text, new_tokens), _("generating"),
                lambda: model_.generate(text, new_tokens),
                spinner=_("Generating one token at a time…"), readonly=False)


def get_layer_summary(run, name: str, layer: int) -> LayerSummary:
    """One pass over every head of one layer of a run's trace, made where the model ran
    (:func:`model.analysis.statistics.summary_of`) and kept for every session: Explore's
    grid of heads and colour ceiling, and a layer of the head statistics, rollout and model
    view. Changing the head, the colours or anything else on a page reads it from here."""
    return memo(("summary", *run.key, name, layer), _("drawing every head of the layer"),
                lambda: summary_of(run.trace, name, layer, tile=TILE_SIDE, grid=GRID_SIDE),
                spinner=_("Computing every head of the layer…"))


def get_summaries(run, name: str) -> list[LayerSummary]:
    """:func:`get_layer_summary` of every layer, with a progress bar while layers are made."""
    n = run.trace.layers(name)
    cache = shared_cache()
    missing = [layer for layer in range(n)
               if not cache.peek(("summary", *run.key, name, layer))[0]]
    out = {}
    if missing:
        bar = st.progress(0.0, text=_("Reading every head of every layer…"))
        for done, layer in enumerate(missing, start=1):
            out[layer] = memo(("summary", *run.key, name, layer),
                              _("reading every head of every layer"),
                              lambda layer=layer: summary_of(run.trace, name, layer,
                                                             tile=TILE_SIDE, grid=GRID_SIDE))
            bar.progress(done / len(missing), text=_(
                "Reading every head of every layer… layer {done} of {total}").format(
                done=done, total=len(missing)))
        bar.empty()
    return [out[layer] if layer in out else get_layer_summary(run, name, layer)
            for layer in range(n)]


def get_head_view(run, name: str, layer: int, head: int, max_side: int) -> tuple:
    """One head as Explore draws it, ``(weights, factors)``: exact up to ``max_side`` tokens
    a side, else pooled where the model ran without holding the whole head
    (:func:`model.reading.blocks.head_pooled`); kept per head."""
    return memo(("head", *run.key, name, layer, head, max_side), _("drawing the head"),
                lambda: head_pooled(run.trace, name, layer, head, max_side))


def get_region(run, name: str, layer: int, head: int, rows: range, keys: range):
    """The exact weights of one head for query ``rows`` × ``keys``, computed for those rows
    only (:func:`model.reading.blocks.region`); kept per region."""
    return memo(("region", *run.key, name, layer, head, rows.start, rows.stop, keys.start,
                 keys.stop), _("drawing the head"),
                lambda: region(run.trace, name, layer, head, rows, keys))


def get_mean(run, name: str, layers, heads, rows: range, keys: range, max_side: int) -> tuple:
    """Weights of query ``rows`` × ``keys`` averaged over ``layers`` and ``heads``, as drawn
    (:func:`model.reading.blocks.mean_pooled`: ``(mean, factors, mass)``); kept per choice."""
    return memo(("mean", *run.key, name, tuple(layers), tuple(heads), rows.start, rows.stop,
                 keys.start, keys.stop, max_side), _("averaging the chosen layers and heads"),
                lambda: mean_pooled(run.trace, name, layers, heads, rows, keys, max_side),
                spinner=_("Averaging the chosen layers and heads…"))


@st.cache_resource(show_spinner=False, max_entries=16)
def get_dot_products(d_k: int) -> np.ndarray:
    """Lesson 4.4's seeded random q·k at width ``d_k``: the same on every run, computed once."""
    return _readonly(dot_products(d_k))


@st.cache_resource(show_spinner=False)
def get_width_statistics() -> tuple:
    """Lesson 4.4's seeded spread and softmax gradient at every width, computed once:
    ``(spreads, (gradient without ÷√d_k, with it))``."""
    return _readonly((spread_by_width(), gradient_by_width()))


# --- lesson 3.8: the Transformer's own troubles, measured -------------------------------------

# The most sentences of each length lesson 3.8 translates for one request.
TROUBLES_MOST_SENTENCES = 100


def get_attention_cost(device: str, largest: int):
    """Lesson 3.8: one layer's attention timed at every length up to ``largest`` tokens on
    ``device`` (:func:`model.lessons.troubles.time_attention`), measured once per device and
    length, in a compute slot. A length whose explicit attention would need more memory than
    one request may take is refused before anything runs (:class:`BudgetError`, naming the
    limit)."""
    from model.lessons.troubles import HEADS, attention_bytes, longest_length, time_attention

    device = str(resolve_device(device))
    limit = limits().request_bytes
    needed = attention_bytes(largest)
    if needed > limit:
        raise BudgetError(_(
            "n = {n:,} needs about {needed} for the explicit attention's n × n scores and "
            "weights ({heads} heads, float32); on this server one request may take {limit} "
            "(ATTENTION_EXPLORER_REQUEST_GB), so n goes up to {longest:,} here.").format(
            n=largest, needed=rough_size(needed), heads=HEADS, limit=rough_size(limit),
            longest=longest_length(limit)))
    return memo(("troubles-attention", device, int(largest)), _("timing attention"),
                lambda: time_attention(largest, device),
                spinner=_("Timing attention at every length…"))


def get_length_reading(device: str, per_length: int, seed: int):
    """Lesson 3.8: own-translator on sentences of 1 to 6 clauses, ``per_length`` of each
    (:func:`model.lessons.troubles.read_longer`), kept per device, count and seed; more than
    :data:`TROUBLES_MOST_SENTENCES` of a length are refused."""
    from model.lessons.troubles import read_longer

    if not 1 <= per_length <= TROUBLES_MOST_SENTENCES:
        raise BudgetError(_("this lesson translates 1 to {most} sentences of each length on "
                            "this server, not {count:,}.").format(
            most=TROUBLES_MOST_SENTENCES, count=per_length))
    device = str(resolve_device(device))
    translator = get_model("own-translator", device)
    return memo(("troubles-length", device, int(per_length), int(seed)),
                _("translating longer sentences"),
                lambda: read_longer(translator, per_length=per_length, seed=seed),
                spinner=_("Translating sentences of every length…"))


def get_loop_timing(device: str, rows: tuple[int, ...]):
    """Lesson 4.5's loop over rows against one matrix product
    (:func:`model.lessons.all_at_once.loop_and_product_times`), measured once per device and
    lengths for every session; refused first when its n × n matrices exceed a request's memory,
    and run in one of the server's slots, so that nothing else runs on the device meanwhile."""
    from model.lessons.all_at_once import check_rows, timing_bytes

    check_rows(rows)
    needed, allowed = timing_bytes(max(rows)), limits().request_bytes
    if needed > allowed:
        raise BudgetError(_("timing {rows:,} rows needs about {needed}; this server allows "
                            "{limit} per request. Choose fewer rows.").format(
            rows=max(rows), needed=rough_size(needed), limit=rough_size(allowed)))
    return _loop_timing(str(resolve_device(device)), tuple(sorted(set(rows))))


@st.cache_data(show_spinner=False, max_entries=8)
def _loop_timing(device: str, rows: tuple[int, ...]):
    from model.lessons.all_at_once import loop_and_product_times

    with shared_cache().slot(), memory_guard(_("timing the loop and the product")):
        return loop_and_product_times(rows, device)


def get_head_stats(run, name: str) -> dict:
    """:func:`model.analysis.statistics.head_stats` of a :class:`~app_pages.frame.run.Run`'s
    trace, from the layers' summaries (shared with rollout and the model view)."""
    key = ("head_stats", *run.key, name)
    found, value = shared_cache().peek(key)  # kept longer than the summaries it came from
    if found:
        return value
    summaries = get_summaries(run, name)
    return memo(key, _("computing head statistics"),
                lambda: head_stats(run.trace, name, summaries),
                spinner=_("Computing every head's statistics…"))


def get_rollout(run, name: str):
    """:func:`model.analysis.rollout.rollout` of a run's trace, from the layers' summaries."""
    key = ("rollout", *run.key, name)
    found, value = shared_cache().peek(key)
    if found:
        return value
    summaries = get_summaries(run, name)
    return memo(key, _("rolling attention out"),
                lambda: rollout(run.trace, name, summaries=summaries),
                spinner=_("Rolling attention out through the layers…"))


def get_model_view(run, name: str, sink: bool = False) -> dict:
    """The model-view figure of a run's trace as a plain dict (every head computed and pooled
    once).

    A dict, not a ``go.Figure``: the chart's element id is computed from the figure, and a
    figure rebuilt from a dict can serialise its layout keys in another order, so the click
    that caused the next run would lose its selection. Its titles are in the session's
    language, which is part of the key.
    """
    key = ("model_view", language(), *run.key, name, sink)
    found, value = shared_cache().peek(key)
    if found:
        return value
    summaries = get_summaries(run, name)

    def drawn() -> dict:
        tiles = np.stack([s.tiles for s in summaries])  # [layer, head, tile rows, tile keys]
        if sink:  # only asked where every tile is drawn token by token (the page checks)
            from model.analysis.faithfulness import sink_left_out

            tiles = np.stack([sink_left_out(tiles[layer], run.trace.mask(name, layer)).weights
                              for layer in range(len(tiles))])
        return viz.model_view(run.trace, name, tiles=tiles).to_dict()

    return memo(key, _("drawing the model view"), drawn,
                spinner=_("Drawing every layer and head…"), readonly=False)


@st.cache_resource(show_spinner=False, max_entries=8)
def _stage_model(step: int, device: str) -> model.LoadedModel:
    from model.own.translator import Translator

    return Translator.from_files(device=device, stage=step)


def get_stage_trace(step: int, device: str, text: str, target: str | None):
    """own-translator after ``step`` steps of its training, traced on ``text`` (and
    ``target``), shared by every session."""
    device = str(resolve_device(device))
    return memo(("stage", step, device, text, target), _("tracing the text"),
                lambda: _stage_model(step, device).trace(text, target=target),
                spinner=_("Running the model and capturing attention…"), readonly=False)


@st.cache_data(show_spinner=False, max_entries=32)
def get_columns(name: str, data: bytes) -> list[str]:
    """:func:`model.corpus.sentences.columns` of an uploaded file, read once, not on every rerun."""
    return columns(name, data)


@st.cache_data(show_spinner=False, max_entries=32)
def get_sentence_file(name: str, data: bytes, column: str | None,
                      limits_: SentenceLimits) -> SentenceFile:
    """:func:`model.corpus.sentences.read_sentences` of an uploaded file, read once per column."""
    return read_sentences(name, data, column, limits_)


def get_token_counts(spec: str, device: str, sentences: tuple[str, ...]) -> np.ndarray:
    """Tokens of each sentence under ``spec`` (its source tokens), counted by the tokenizer
    alone and kept, so that a rerun of the Corpus page does not count them again."""
    loaded = get_model(spec, device)
    return memo(("token_counts", spec, sentences), _("counting tokens"),
                lambda: np.array([loaded.count_tokens(s).source for s in sentences],
                                 dtype=np.int64), spinner=_("Counting tokens…"))


def get_head_changes(spec: str, device: str, first: str, second: str, name: str) -> list:
    """Every head of kind ``name`` ranked by how much it changes from sentence ``first`` to
    ``second`` (:func:`model.corpus.statistics.heads_by_change`, one layer at a time), kept
    for every session."""

    traces = [get_trace(spec, device, text) for text in (first, second)]
    device = str(resolve_device(device))

    def changes() -> list:
        return heads_by_change((traces[0].layer_weights(name, layer),
                                traces[1].layer_weights(name, layer))
                               for layer in range(traces[0].layers(name)))

    with explained_errors():
        return memo(("head_changes", spec, device, first, second, name),
                    _("comparing every head"), changes, spinner=_("Comparing every head…"),
                    readonly=False)


# A corpus batch on the server holds at most this many tokens: smollm2 runs 4 sentences of 256
# tokens in about 1.5-3 s on 2 busy CPU cores (32 of them took 10-20 s), so a short request
# waiting for a slot is served within seconds.
SERVER_BATCH_TOKENS = 1024


def corpus_key(spec: str, device: str, sentences: tuple[str, ...], span: Span | None) -> tuple:
    """The shared cache's key of a corpus run (the device resolved)."""
    return ("corpus", spec, str(resolve_device(device)), sentences, span)


def find_corpus(spec: str, device: str, sentences: tuple[str, ...], span: Span | None):
    """The result of :func:`get_corpus` when the shared cache holds it (a run of this session
    before a reload, or another's), else None; nothing runs."""
    found, value = shared_cache().peek(corpus_key(spec, device, sentences, span))
    return value if found else None


def get_corpus(spec: str, device: str, sentences: tuple[str, ...], span: Span | None):
    """The statistics of every sentence, kind, layer and head of ``spec`` on ``sentences``
    (:func:`model.corpus.engine.corpus_table`): ``(table, skipped, tokens)``, run in batches with a
    progress bar and kept for every session.

    Each batch takes a compute slot and gives it back, so that others' short requests are
    served between batches; while it waits, the bar says how many requests are ahead; a run
    whose session has gone stops at its next batch (:class:`Cancelled`)."""
    loaded = get_model(spec, device)
    key = corpus_key(spec, device, sentences, span)
    found, value = shared_cache().peek(key)
    if found:
        return value  # before the bar is drawn
    bar = st.progress(0.0, text=_("Running {count:,} sentences…").format(count=len(sentences)))
    done = [0]

    def progress(finished: int, total: int) -> None:
        done[0] = finished
        bar.progress(finished / total, text=_(
            "Running the sentences… {done:,} of {total:,}").format(done=finished, total=total))

    def waiting(ahead: int) -> None:
        bar.progress(done[0] / len(sentences), text=_(
            "Waiting for a free slot: {ahead:,} requests ahead in the queue ({done:,} of "
            "{total:,} sentences done)").format(ahead=ahead, done=done[0],
                                              total=len(sentences)))

    def each_batch():
        return shared_cache().slot(waiting=waiting, stop_when_gone=True)

    def run() -> tuple:
        tokens: list = []
        table, skipped = corpus_table(loaded, sentences, span=span, progress=progress,
                                      tokens=tokens, batch=each_batch,
                                      max_batch_tokens=SERVER_BATCH_TOKENS)
        return table, skipped, tuple(tokens)

    result = memo(key, _("running the sentences"), run, slot=False)
    bar.progress(1.0, text=_("Ran {count:,} sentences.").format(count=len(sentences)))
    return result


def _readonly(value):
    """``value`` with its numpy arrays made read-only: shared results must not change."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, dict):
        for item in value.values():
            _readonly(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _readonly(item)
    return value


# --- lesson 3.6: the recurrent models beside the Transformer ---------------------------------

@st.cache_resource(show_spinner=False, max_entries=6)
def get_recurrent(name: str, device: str):
    """``own-rnn``, ``own-gru`` or ``own-bahdanau`` (:mod:`model.own.recurrent`), one per
    server and device, in float32 as they were trained (the lesson's figures on any device).
    Kept apart from the sidebar's models (:func:`get_model`, four at most): the lesson's three
    would push minilm and smollm2 out of those, and they are tiny."""
    from model.own.recurrent import RecurrentTranslator

    return RecurrentTranslator.from_files(name, device=device, dtype="float32")


def _single_vector(device: str) -> dict:
    return {name: get_recurrent(name, device) for name in ("own-rnn", "own-gru")}


def get_rnn_side_by_side(device: str, text: str):
    """One sentence through the single-vector models, Bahdanau's GRU and the Transformer."""
    from model.lessons.rnn import side_by_side

    device = str(resolve_device(device))
    models = (_single_vector(device), get_recurrent("own-bahdanau", device),
              get_model("own-translator", device))
    return memo(("rnn-side", device, text), _("translating the sentence"),
                lambda: side_by_side(*models, text), spinner=_("Running the models…"))


def get_rnn_forgetting(device: str):
    """Held-out exact match by length for every model (computed once per device)."""
    from model.lessons.rnn import accuracy_by_length

    device = str(resolve_device(device))
    models = {**_single_vector(device), "own-bahdanau": get_recurrent("own-bahdanau", device),
              "own-translator": get_model("own-translator", device)}
    return memo(("rnn-forgetting", device), _("translating the held-out sentences"),
                lambda: accuracy_by_length(models),
                spinner=_("Translating 500 held-out sentences with each model…"),
                readonly=False)


def get_rnn_gradient(device: str, text: str):
    """The gradient along the information path for ``text`` (recurrent and Transformer
    encoders)."""
    from model.lessons.rnn import gradient_by_distance

    device = str(resolve_device(device))
    single, translator = _single_vector(device), get_model("own-translator", device)
    return memo(("rnn-gradient", device, text), _("computing gradients"),
                lambda: gradient_by_distance(single, translator, text),
                spinner=_("Computing the gradients by autograd…"))


def get_rnn_gradient_profile(device: str, texts: tuple[str, ...]):
    """The gradient's median profile over ``texts`` (computed once per device and texts)."""
    from model.lessons.rnn import gradient_profile

    device = str(resolve_device(device))
    single, translator = _single_vector(device), get_model("own-translator", device)
    return memo(("rnn-profile", device, texts), _("computing gradients"),
                lambda: gradient_profile(single, translator, list(texts)),
                spinner=_("Computing the gradients of {count} long texts by autograd…").format(
                    count=len(texts)), readonly=False)


def get_rnn_timing(device: str, lengths: tuple[int, ...]):
    """One encoder pass of each model timed for each length (measured once per device)."""
    from model.lessons.rnn import forward_times

    device = str(resolve_device(device))
    gru, translator = get_recurrent("own-gru", device), get_model("own-translator", device)
    return memo(("rnn-timing", device, lengths), _("timing the encoders"),
                lambda: forward_times(gru, translator, lengths),
                spinner=_("Timing both encoders at every length…"), readonly=False)


# --- What moves (issue 26): the methods beside raw weights, head ablation, the query-key map ---
# Interventions run in the asking thread only (model.own.hooks.intervene, model.hf.moves.probe),
# and their results are kept under keys of their own: no ablated pass is ever a trace's.

def get_attention_parts(run):
    """The run's values, output projections, queries and keys
    (:class:`~model.analysis.faithfulness.AttentionParts`), once per run."""
    return memo(("moves_parts", *run.key), _("reading values and output projections"),
                lambda: run.model.attention_parts(run.key.text, run.key.target),
                spinner=_("Reading every layer's values and output projection…"),
                readonly=False)


def get_value_zeroing(run, name: str, layer: int) -> np.ndarray:
    """Value zeroing of one layer (one pass per key)."""
    from model.analysis.moves import layer_value_zeroing

    parts = get_attention_parts(run)
    return memo(("value_zeroing", *run.key, name, layer), _("zeroing each value"),
                lambda: layer_value_zeroing(run.model, run.key.text, parts, name, layer),
                spinner=_("Zeroing each token's value in turn and running the layer again…"))


def get_norm_rollout(run, name: str) -> np.ndarray:
    """Norm-based rollout of a self-attention stack, ``[layer, query, key]``."""
    from model.analysis.moves import rollout_of_norms

    parts = get_attention_parts(run)
    return memo(("norm_rollout", *run.key, name), _("rolling contributions out"),
                lambda: rollout_of_norms(parts, name))


def get_ablation(run, name: str, layer: int, heads: tuple[int, ...]):
    """What leaving ``heads`` out of one layer changes
    (:class:`~model.analysis.faithfulness.Ablation`)."""
    parts = get_attention_parts(run)
    return memo(("ablation", *run.key, name, layer, tuple(heads)), _("leaving heads out"),
                lambda: run.model.ablation(run.key.text, name, layer, list(heads),
                                           parts.target),
                spinner=_("Running the model without the chosen heads…"), readonly=False)


def get_head_ranking(run, name: str, layer: int) -> list:
    """Every head of a layer left out alone, largest change first (a progress bar per head)."""
    from model.analysis.moves import rank_heads

    key = ("head_ranking", *run.key, name, layer)
    found, value = shared_cache().peek(key)
    if found:
        return value
    parts = get_attention_parts(run)
    bar = st.progress(0.0, text=_("Leaving each head out in turn…"))

    def progress(done: int, total: int) -> None:
        bar.progress(done / total, text=_("Left out {done} of {total} heads").format(
            done=done, total=total))

    try:
        return memo(key, _("ranking heads"), lambda: rank_heads(
            run.model, run.key.text, name, layer, parts.target, progress=progress),
            readonly=False)
    finally:
        bar.empty()


def get_qk_map(run, name: str, layer: int, head: int, method: str):
    """A head's queries and keys in one 2-D map (:func:`model.analysis.moves.qk_map`)."""
    from model.analysis.moves import qk_map

    parts = get_attention_parts(run)
    return memo(("qk_map", *run.key, name, layer, head, method), _("mapping queries and keys"),
                lambda: qk_map(parts, name, layer, head, method),
                spinner=_("Projecting the queries and keys…"), readonly=False)


def get_trace_with_moves(run):
    """The run's trace with What moves' arrays beside its weights (the export's optional
    ``KIND.METHOD`` arrays), for its download."""
    from model.analysis.moves import with_extras

    return memo(("trace_with_moves", *run.key), _("computing what moves in every layer"),
                lambda: with_extras(run.model, run.key.text, run.key.target), readonly=False)
