"""All caching of the app: models with ``st.cache_resource``; traces and the slow analyses of a
trace in one :class:`SharedCache`, keyed on what was traced (a
:class:`~app_pages.frame.common.RunKey`).

Traces are immutable, so every session and rerun is served the same object: nothing is copied
or unpickled per rerun (``st.cache_data`` would copy each time: 183 MB for a 2,000-token smollm2
trace). The cache is bounded by the bytes it holds, not by a number of entries, and the least
recently used results go first. At most ``concurrent_runs`` traces or analyses are computed at
once (:class:`Slots`: handed out in the order they were asked for, at most one per session), and
a result that another session is already computing is waited for, not computed twice. Long runs
(a corpus, every layer of an analysis) take a slot for each batch or layer and give it back in
between, so that a short request asked meanwhile is served after one batch; a run whose session
has gone (its tab closed) stops at its next batch (:class:`Cancelled`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

import model
import viz
from i18n import _, language
from model.analysis.rollout import rollout
from model.analysis.statistics import head_stats, summary_of
from model.budget import check_request, memory_guard
from model.corpus.engine import corpus_table
from model.corpus.sentences import SentenceFile, SentenceLimits, columns, read_sentences
from model.corpus.statistics import Span, heads_by_change
from model.device import resolve_device
from model.lessons.math import dot_products, gradient_by_width, spread_by_width
from model.policy import Limits, LoadPolicy
from model.reading.blocks import LayerSummary, head_pooled, mean_pooled, region


def nbytes(value: Any, _seen: set[int] | None = None) -> int:
    """The bytes of every numpy array reachable from ``value`` (through dataclasses, objects'
    attributes, mappings and sequences), each counted once, plus strings and bytes."""
    seen = set() if _seen is None else _seen
    if id(value) in seen or value is None or isinstance(value, (bool, int, float, type)):
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value.base if isinstance(value.base, np.ndarray) else None
        return nbytes(base, seen) if base is not None else value.nbytes
    if isinstance(value, (str, bytes)):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(nbytes(v, seen) for v in value)
    if is_dataclass(value):
        return sum(nbytes(getattr(value, f.name), seen) for f in fields(value))
    if hasattr(value, "__dict__"):
        return nbytes(vars(value), seen)
    return 0


class _Pending:
    """A result being computed: whoever asks meanwhile waits for it (or for its error)."""

    def __init__(self):
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.language = ""  # of the session computing it: its error's message is in it
        self.waiters = 0  # sessions waiting for it


class Cancelled(Exception):  # noqa: N818 (what happened, not an error of the user's)
    """The session that asked for a long run has gone (its tab closed): the run stopped at
    its next batch. Whoever else waited for the same result computes it again."""


def session_id() -> str | None:
    """The Streamlit session this thread runs for (None outside a session: the API, tests)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def session_active(session: str | None) -> bool:
    """Whether ``session`` still has a browser connected (True outside a server)."""
    from streamlit.runtime import Runtime

    if session is None or not Runtime.exists():
        return True
    return Runtime.instance().is_active_session(session)


class Slots:
    """``n`` compute slots, handed out in the order they were asked for, at most one per
    session at a time: a session that asks again while it holds one (another tab's run is
    another session) waits behind the others instead of taking a second.

    A long run takes a slot per batch (:meth:`hold`) and gives it back in between, so that
    whoever asked meanwhile is served first.
    """

    POLL = 0.25  # seconds between calls of ``waiting`` and checks that the session is there

    def __init__(self, n: int):
        self.n = max(1, n)
        self._cond = threading.Condition()
        self._queue: deque[tuple[object, Hashable]] = deque()  # (ticket, owner), in order
        self._holders: dict[Hashable, int] = {}  # owner -> slots held

    @property
    def held(self) -> int:
        with self._cond:
            return sum(self._holders.values())

    @property
    def queued(self) -> int:
        with self._cond:
            return len(self._queue)

    def _ahead(self, ticket: object) -> int | None:
        """How many requests are before ``ticket`` in the queue; None when it may take a slot
        now (a free slot, and no earlier request that may take it; a request whose session
        holds a slot already waits for that one)."""
        free = self.n - sum(self._holders.values())
        busy = set(self._holders)
        ahead = 0
        for queued, owner in self._queue:
            if owner not in busy and free > 0:
                if queued is ticket:
                    return None
                free -= 1
                busy.add(owner)
            if queued is ticket:
                return ahead
            ahead += 1
        return ahead

    @contextmanager
    def hold(self, owner: Hashable | None = None,
             waiting: Callable[[int], None] | None = None,
             cancelled: Callable[[], bool] | None = None) -> Iterator[None]:
        """Hold a slot for the block.

        Args:
            owner: who asks (a session id; None: nobody else's, a slot of its own).
            waiting: called with the number of requests ahead, now and then while it waits
                (outside the lock: it may draw on the page, or raise to give up).
            cancelled: whether to give up; checked while waiting (raises :class:`Cancelled`).
        """
        ticket = object()
        owner = ticket if owner is None else owner
        with self._cond:
            self._queue.append((ticket, owner))
        try:
            while True:
                with self._cond:
                    ahead = self._ahead(ticket)
                    if ahead is None:
                        self._queue.remove((ticket, owner))
                        self._holders[owner] = self._holders.get(owner, 0) + 1
                        break
                    self._cond.wait(self.POLL)
                    ahead = self._ahead(ticket)
                    if ahead is None:
                        continue
                if cancelled is not None and cancelled():
                    raise Cancelled()
                if waiting is not None:
                    waiting(ahead)
        except BaseException:
            with self._cond:
                if (ticket, owner) in self._queue:
                    self._queue.remove((ticket, owner))
                self._cond.notify_all()
            raise
        try:
            yield
        finally:
            with self._cond:
                self._holders[owner] -= 1
                if not self._holders[owner]:
                    del self._holders[owner]
                self._cond.notify_all()


class SharedCache:
    """A least-recently-used cache bounded by bytes, shared by every session, that computes each
    key once and at most ``workers`` computations at a time.

    Whoever asks for a key being computed waits and gets the same result (or the same error),
    even when the result is too large to keep. A computation may ask the cache again (an
    analysis asking for its trace): a thread that holds a worker slot does not wait for
    another. Slots go to sessions in the order they asked (:class:`Slots`).

    Args:
        max_bytes: the most it holds; a result larger than this is returned but not kept.
        workers: computations running at once.
    """

    def __init__(self, max_bytes: int, workers: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._running: dict[Hashable, _Pending] = {}
        self.slots = Slots(workers)
        self._held = threading.local()

    @property
    def size(self) -> int:
        """Bytes held now."""
        with self._lock:
            return sum(size for _value, size in self._items.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def peek(self, key: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` when ``key`` is held (it becomes the most recently used), else
        ``(False, None)``."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key][0]
            return False, None

    @contextmanager
    def slot(self, waiting: Callable[[int], None] | None = None,
             stop_when_gone: bool = False) -> Iterator[None]:
        """Hold one of the worker slots for a computation (at once if this thread holds one),
        as this thread's session (:func:`session_id`).

        Args:
            waiting: called with the requests ahead while it waits (see :meth:`Slots.hold`).
            stop_when_gone: raise :class:`Cancelled` instead of computing when the session
                has no browser any more (a long run's next batch).
        """
        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        session = session_id()
        gone = (lambda: not session_active(session)) if stop_when_gone else None
        if gone is not None and gone():
            raise Cancelled()
        with self.slots.hold(session, waiting=waiting, cancelled=gone):
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0

    def get(self, key: Hashable, compute: Callable[[], Any], slot: bool = True) -> Any:
        """The cached value of ``key``, else ``compute()`` (once, whoever asks meanwhile).

        ``slot``: compute in a worker slot; False for a long run that takes one per batch
        itself (:meth:`slot`)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            pending = self._running.get(key)
            mine = pending is None
            if mine:
                pending = self._running[key] = _Pending()
            else:
                pending.waiters += 1
        if not mine:
            pending.done.wait()
            if pending.error is not None:
                if isinstance(pending.error, (Cancelled, ScriptControlException)):
                    # its session left, or stopped or reran its script (Streamlit stops a
                    # closed tab's run at its next call): ours still wants the result
                    return self.get(key, compute, slot)
                if pending.language != language():
                    # its message is in the other session's language: fail in ours (errors
                    # are not kept, so this computes again, once per language at most)
                    return self.get(key, compute, slot)
                raise pending.error
            return pending.value
        pending.language = language()
        try:
            if slot:
                with self.slot():
                    pending.value = compute()
            else:
                pending.value = compute()
            self._put(key, pending.value)
        except BaseException as error:
            pending.error = error
            raise
        finally:
            with self._lock:
                del self._running[key]
            pending.done.set()
        return pending.value

    def _put(self, key: Hashable, value: Any) -> None:
        size = nbytes(value)
        if size > self.max_bytes:
            return
        evicted = []
        with self._lock:
            self._items[key] = (value, size)
            total = sum(size for _value, size in self._items.values())
            while total > self.max_bytes:
                _key, (old, dropped) = self._items.popitem(last=False)
                evicted.append(old)
                total -= dropped
        if evicted:
            del evicted, old  # freed here unless a session still holds them
            trim_freed_memory()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def return_freed_memory() -> bool:
    """Make the C allocator give large freed blocks back to the system (glibc only).

    glibc serves a request of more than 128 KB with its own memory map, but raises that
    threshold to the size of each such block freed, up to 32 MB: after a few traces, the
    per-head arrays of a long input (16 MB at 2,000 tokens) came from the heap and stayed there
    once freed. Measured over 20 distinct 2,000-token smollm2 traces in one server process
    (``python -m bench.request_memory --traces 20``): 4.1 GB at the worst without this, a flat
    2.1 GB with it. Setting the threshold fixes it at :data:`MMAP_BYTES`, above a block of
    weights (:data:`model.store.BLOCK_BYTES`, more for a long input's rows), so that the
    blocks every analysis reads and their temporaries are reused from the heap; mapping each
    anew made a pass over every head of smollm2 at 2,048 tokens 2.2 times slower (5.7 s
    instead of 2.6 s). What the heap keeps is given back by :func:`trim_freed_memory`.

    Returns:
        whether the setting was applied.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_BYTES))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False


MMAP_BYTES = 32 << 20  # above a block of 64 rows of 8,192 keys and 9 heads (19 MB); glibc
# before 2.35 refuses a threshold above 32 MB


def trim_freed_memory() -> bool:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``), after the
    cache let results go: arrays under :data:`MMAP_BYTES` come from the heap, and a trace's
    queries and keys (5 MB a layer at 2,000 tokens) left free pages between others. Measured
    as in :func:`return_freed_memory`: 3.5 GB at the worst without it; with it 2.7 GB while
    the cache fills, then a flat 2.1 GB."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


M_MMAP_THRESHOLD = -3  # glibc's malloc.h
return_freed_memory()


@st.cache_resource
def limits() -> Limits:
    """The operator's limits (environment variables, read once per server)."""
    return Limits.from_env()


@st.cache_resource
def policy() -> LoadPolicy:
    """The operator's load policy for this server's address (read once per server)."""
    return LoadPolicy.from_env(st.get_option("server.address"))


@st.cache_resource
def shared_cache() -> SharedCache:
    """The one cache of traces and analyses of this server."""
    bounds = limits()
    return SharedCache(bounds.trace_cache_bytes, bounds.concurrent_runs)


def get_model(spec: str, device: str = "auto") -> model.LoadedModel:
    """The loaded model for ``spec`` on ``device``, shared by every session; ``auto`` is
    resolved first, so that ``auto`` and the device it means share one copy."""
    return _loading_model(spec.strip(), str(resolve_device(device)))


def _loading_model(spec: str, device: str) -> model.LoadedModel:
    with st.spinner(_("Loading the model… (a GGUF file is converted once: ~30 s)")):
        return _load(spec, device)


@st.cache_resource(show_spinner=False, max_entries=4)
def _load(spec: str, device: str) -> model.LoadedModel:
    rules = policy()
    # One model loads at a time: transformers builds models on the meta device by patching
    # torch globally, which two loads in two sessions' threads must not do at once.
    with _LOADING:
        return model.load(spec, device=device, trust_remote_code=rules.trust_remote_code,
                          policy=rules)


_LOADING = threading.Lock()


def _cached(key: tuple, spinner: str, what: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` through the shared cache, under ``memory_guard(what)``, with a spinner
    while it runs."""
    cache = shared_cache()
    found, value = cache.peek(key)
    if found:
        return value

    def guarded():
        with memory_guard(what):
            return compute()

    with st.spinner(spinner):
        return cache.get(key, guarded)


@contextmanager
def heavy_work(what: str) -> Iterator[None]:
    """A page's own computation on a trace (every head of a layer, a window's panels) in one of
    the server's worker slots, running out of memory explained on the page."""
    from app_pages.frame.common import explained_errors

    with explained_errors(), shared_cache().slot(), memory_guard(what):
        yield


def get_trace(spec: str, device: str, text: str, target: str | None = None) -> model.AttentionTrace:
    """The attention trace of ``text`` (and ``target``) under ``spec``, shared by every session
    (traces are immutable); a text over the server's memory limit is refused first
    (:class:`~model.budget.BudgetError`)."""
    device = str(resolve_device(device))

    def trace() -> model.AttentionTrace:
        loaded = get_model(spec, device)
        # refused before the model runs when the text needs more than a request may
        check_request(loaded, loaded.count_tokens(text, target), limits().request_bytes)
        return loaded.trace(text, target=target)

    return _cached(("trace", spec, device, text, target),
                   _("Running the model and capturing attention…"), _("tracing the text"), trace)


def get_generation(spec: str, device: str, text: str, new_tokens: int | None = None):
    """The model's greedy generation of ``text`` with its KV cache measured at every step
    (:class:`model.interface.Generation`), shared by every session."""
    model_ = get_model(spec, device)
    return _cached(("generation", spec, str(model_.device), text, new_tokens),
                   _("Generating one token at a time…"), _("generating"),
                   lambda: model_.generate(text, new_tokens))


def get_layer_summary(run, name: str, layer: int) -> LayerSummary:
    """One pass over every head of one layer of a run's trace, made where the model ran
    (:func:`model.analysis.statistics.summary_of`) and kept for every session: Explore's
    grid of heads and colour ceiling, and a layer of the head statistics, rollout and model
    view. Changing the head, the colours or anything else on a page reads it from here."""
    key = ("summary", *run.key, name, layer)
    found, value = shared_cache().peek(key)
    if found:
        return value
    with st.spinner(_("Computing every head of the layer…")):
        return shared_cache().get(key, lambda: _guarded(
            _("drawing every head of the layer"), lambda: _readonly(
                summary_of(run.trace, name, layer))))


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
            out[layer] = cache.get(("summary", *run.key, name, layer), lambda layer=layer: _guarded(
                _("reading every head of every layer"), lambda: _readonly(
                    summary_of(run.trace, name, layer))))
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
    key = ("head", *run.key, name, layer, head, max_side)
    found, value = shared_cache().peek(key)
    if found:
        return value
    return shared_cache().get(key, lambda: _guarded(
        _("drawing the head"), lambda: _readonly(
            head_pooled(run.trace, name, layer, head, max_side))))


def get_region(run, name: str, layer: int, head: int, rows: range, keys: range):
    """The exact weights of one head for query ``rows`` × ``keys``, computed for those rows
    only (:func:`model.reading.blocks.region`); kept per region."""
    key = ("region", *run.key, name, layer, head, rows.start, rows.stop, keys.start, keys.stop)
    found, value = shared_cache().peek(key)
    if found:
        return value
    return shared_cache().get(key, lambda: _guarded(
        _("drawing the head"), lambda: _readonly(region(run.trace, name, layer, head, rows,
                                                          keys))))


def get_mean(run, name: str, layers, heads, rows: range, keys: range, max_side: int) -> tuple:
    """Weights of query ``rows`` × ``keys`` averaged over ``layers`` and ``heads``, as drawn
    (:func:`model.reading.blocks.mean_pooled`: ``(mean, factors, mass)``); kept per choice."""
    key = ("mean", *run.key, name, tuple(layers), tuple(heads), rows.start, rows.stop,
           keys.start, keys.stop, max_side)
    found, value = shared_cache().peek(key)
    if found:
        return value
    with st.spinner(_("Averaging the chosen layers and heads…")):
        return shared_cache().get(key, lambda: _guarded(
            _("averaging the chosen layers and heads"), lambda: _readonly(mean_pooled(
                run.trace, name, layers, heads, rows, keys, max_side))))


def _guarded(what: str, compute: Callable[[], Any]) -> Any:
    with memory_guard(what):
        return compute()


@st.cache_resource(show_spinner=False, max_entries=16)
def get_dot_products(d_k: int) -> np.ndarray:
    """Lesson 4.4's seeded random q·k at width ``d_k``: the same on every run, computed once."""
    return _readonly(dot_products(d_k))


@st.cache_resource(show_spinner=False)
def get_width_statistics() -> tuple:
    """Lesson 4.4's seeded spread and softmax gradient at every width, computed once:
    ``(spreads, (gradient without ÷√d_k, with it))``."""
    return _readonly((spread_by_width(), gradient_by_width()))


def get_head_stats(run, name: str) -> dict:
    """:func:`model.analysis.statistics.head_stats` of a :class:`~app_pages.frame.common.Run`'s
    trace, from the layers' summaries (shared with rollout and the model view)."""
    key = ("head_stats", *run.key, name)
    found, value = shared_cache().peek(key)  # kept longer than the summaries it came from
    if found:
        return value
    summaries = get_summaries(run, name)
    return _cached(key, _("Computing every head's statistics…"),
                   _("computing head statistics"),
                   lambda: _readonly(head_stats(run.trace, name, summaries)))


def get_rollout(run, name: str):
    """:func:`model.analysis.rollout.rollout` of a run's trace, from the layers' summaries."""
    key = ("rollout", *run.key, name)
    found, value = shared_cache().peek(key)
    if found:
        return value
    summaries = get_summaries(run, name)
    return _cached(key, _("Rolling attention out through the layers…"),
                   _("rolling attention out"),
                   lambda: _readonly(rollout(run.trace, name, summaries=summaries)))


def get_model_view(run, name: str) -> dict:
    """The model-view figure of a run's trace as a plain dict (every head computed and pooled
    once).

    A dict, not a ``go.Figure``: the chart's element id is computed from the figure, and a
    figure rebuilt from a dict can serialise its layout keys in another order, so the click
    that caused the next run would lose its selection. Its titles are in the session's
    language, which is part of the key.
    """
    key = ("model_view", language(), *run.key, name)
    found, value = shared_cache().peek(key)
    if found:
        return value
    summaries = get_summaries(run, name)
    return _cached(key,
                   _("Drawing every layer and head…"),
                   _("drawing the model view"),
                   lambda: viz.model_view(run.trace, name, tiles=np.stack(
                       [s.tiles for s in summaries])).to_dict())


@st.cache_resource(show_spinner=False, max_entries=8)
def _stage_model(step: int, device: str) -> model.LoadedModel:
    from model.own.translator import Translator

    return Translator.from_files(device=device, stage=step)


def get_stage_trace(step: int, device: str, text: str, target: str | None):
    """own-translator after ``step`` steps of its training, traced on ``text`` (and
    ``target``), shared by every session."""
    device = str(resolve_device(device))
    return _cached(("stage", step, device, text, target),
                   _("Running the model and capturing attention…"), _("tracing the text"),
                   lambda: _stage_model(step, device).trace(text, target=target))


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
    return _cached(("token_counts", spec, sentences), _("Counting tokens…"),
                   _("counting tokens"), lambda: _readonly(np.array(
                       [loaded.count_tokens(s).source for s in sentences], dtype=np.int64)))


def get_head_changes(spec: str, device: str, first: str, second: str, name: str) -> list:
    """Every head of kind ``name`` ranked by how much it changes from sentence ``first`` to
    ``second`` (:func:`model.corpus.statistics.heads_by_change`, one layer at a time), kept
    for every session."""
    from app_pages.frame.common import explained_errors

    traces = [get_trace(spec, device, text) for text in (first, second)]
    device = str(resolve_device(device))

    def changes() -> list:
        return heads_by_change((traces[0].layer_weights(name, layer),
                                traces[1].layer_weights(name, layer))
                               for layer in range(traces[0].layers(name)))

    with explained_errors():
        return _cached(("head_changes", spec, device, first, second, name),
                       _("Comparing every head…"), _("comparing every head"), changes)


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
        return value
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
        return _readonly((table, skipped, tuple(tokens)))

    result = shared_cache().get(key, lambda: _guarded(_("running the sentences"), run),
                                slot=False)
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
