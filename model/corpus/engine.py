"""Head statistics over a corpus, in this process or on a Ray cluster, with the same table.

``run_corpus(spec, sentences)`` loads the model, runs the sentences in padded batches and
returns one row per sentence × kind × layer × head (:data:`model.corpus.statistics.COLUMNS`,
with the sentence's text). With ``engine="ray"`` the same batches go to a pool of Ray workers
through Ray Data (each worker loads the model once, on a GPU where the cluster has them); the
rows, gathered and ordered, are the same table.

Ray is optional: it is imported only for ``engine="ray"``. Start a local cluster with
``ray start --head`` (or let ``ray.init()`` start one inside the run when no address is
given); point at an existing one with ``address="ray://HOST:10001"`` or ``"HOST:6379"``, or
set ``RAY_ADDRESS``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import numpy as np
import torch

from i18n import _
from model.budget import Lengths
from model.corpus.statistics import Span, batch_statistics, merge

ENGINES = ("local", "ray")
BATCH_SIZE = 32
MAX_BATCH_BYTES = 1 << 30  # what one batch may hold: its capture and its statistics


def corpus_table(model, sentences: Sequence[str], *, batch_size: int = BATCH_SIZE,
                 span: Span | None = None, progress: Callable[[int, int], None] | None = None,
                 max_batch_bytes: int = MAX_BATCH_BYTES, tokens: list | None = None,
                 batch: Callable[[], AbstractContextManager] | None = None,
                 max_batch_tokens: int | None = None
                 ) -> tuple[dict[str, np.ndarray], list[tuple[int, str]]]:
    """Statistics of every sentence with a loaded model, in this process.

    ``tokens``: a list, filled in place with each sentence's tokens as the model read them
    (a single-stack model's input, an encoder-decoder's source), None for a sentence left
    out.

    Sentences run in batches of similar lengths, at most ``batch_size``, cut where a batch would
    need more than ``max_batch_bytes`` (what the model's capture keeps per sentence, from
    :meth:`~model.interface.LoadedModel.memory_needed`, and a few copies of a layer's padded
    weights). A batch that fails with a sentence the model cannot read (too long, unknown
    words) runs again one sentence at a time, and the sentences that still fail are left out;
    a batch that runs out of memory runs again in halves.

    ``batch``: a context each batch runs in (a shared server's compute slot, taken per batch
    and given back in between so that others are served; it may raise to stop the run).
    ``max_batch_tokens``: a batch also holds at most this many tokens, padding included (short
    batches give a shared server's slot back often).

    Returns:
        ``(table, skipped)``: the columns of :func:`model.corpus.statistics.batch_statistics`
        with ``sentence`` indexing ``sentences``, and ``(index, message)`` of each sentence
        left out.

    Raises:
        ValueError: a span pattern is not a regular expression.
    """
    sentences = list(sentences)
    if span is not None:
        span.compiled()  # a bad pattern is refused before anything runs
    if tokens is not None:
        tokens[:] = [None] * len(sentences)
    parts: list = []
    skipped: list[tuple[int, str]] = []
    sizes: list[Lengths | None] = []
    for index, text in enumerate(sentences):
        try:
            sizes.append(model.count_tokens(text))
        except (ValueError, TypeError) as error:
            sizes.append(None)
            skipped.append((index, str(error)))
    done = len(skipped)
    # batches of similar lengths: less padding to run (rows are put back in order at the end)
    order = sorted((i for i, size in enumerate(sizes) if size is not None),
                   key=lambda i: (sizes[i].longest, i))
    for start, stop in cut(model, [sizes[i] for i in order], batch_size, max_batch_bytes,
                           max_batch_tokens):
        with batch() if batch is not None else nullcontext():
            _run(model, sentences, order[start:stop], span, parts, skipped, tokens)
        done += stop - start
        if progress is not None:
            progress(done, len(sentences))
    table = merge([(0, part) for part in parts], span)
    rows = np.argsort(table["sentence"], kind="stable")  # each sentence's rows stay in order
    return {key: value[rows] for key, value in table.items()}, sorted(skipped)


LAYER_COPIES = 8  # padded [sentence, head, query, key] tensors alive at once for statistics


def cut(model, sizes: Sequence[Lengths], batch_size: int, budget: int,
        max_tokens: int | None = None):
    """``(start, stop)`` of consecutive batches of sentences of ``sizes``, at most
    ``batch_size`` each, within ``budget`` bytes and (when given) ``max_tokens`` tokens once
    padded to the batch's longest."""
    heads = model.dims.n_heads
    start = 0
    while start < len(sizes):
        stop, source, target = start, 0, 0
        while stop < len(sizes) and stop - start < batch_size:
            source = max(source, sizes[stop].source)
            target = max(target, sizes[stop].target)
            longest = Lengths(source, target)
            one = model.memory_needed(longest) + LAYER_COPIES * heads * longest.longest ** 2 * 4
            if stop > start and ((stop + 1 - start) * one > budget or (
                    max_tokens is not None
                    and (stop + 1 - start) * (source + target) > max_tokens)):
                break
            stop += 1
        yield start, stop
        start = stop


def _run(model, sentences, indices: list[int], span, parts: list, skipped: list,
         tokens: list | None = None) -> None:
    """Statistics of the sentences at ``indices`` into ``parts`` (their ``sentence`` column
    holding those indices), or their messages into ``skipped``; their tokens into
    ``tokens``."""
    texts = [sentences[i] for i in indices]
    try:
        batch = model.attention_batch(texts)
        table = batch_statistics(batch, span)
    except ValueError as error:
        if len(texts) == 1:
            skipped.append((indices[0], str(error)))
            return
        for index in indices:  # find the sentences the model cannot read
            _run(model, sentences, [index], span, parts, skipped, tokens)
        return
    except (torch.OutOfMemoryError, MemoryError):
        if len(texts) == 1:
            skipped.append((indices[0], _("out of memory: this sentence alone needs more than "
                                          "the device has")))
            return
        middle = len(indices) // 2
        _run(model, sentences, indices[:middle], span, parts, skipped, tokens)
        _run(model, sentences, indices[middle:], span, parts, skipped, tokens)
        return
    table["sentence"] = np.asarray(indices)[table["sentence"]]
    parts.append(table)
    if tokens is not None:
        for index, trace in zip(indices, batch.traces):
            # the first token axis: the prompt, or the source an encoder-decoder read
            tokens[index] = tuple(str(t) for t in trace.axis_tokens(trace.family.axis_names[0]))


def run_corpus(spec: str, sentences: Sequence[str], *, engine: str = "local",
               address: str | None = None, device: str = "auto", dtype: str = "auto",
               batch_size: int = BATCH_SIZE, span: Span | None = None,
               progress: Callable[[int, int], None] | None = None, workers: int | None = None):
    """The corpus table of ``spec`` on ``sentences`` as a pandas DataFrame.

    Args:
        engine: ``"local"`` (this process) or ``"ray"`` (Ray Data on a cluster).
        address: the Ray cluster (default: ``RAY_ADDRESS``, else a local one started here).
        device, dtype: where and in what precision the model runs (as :func:`model.load`).
        workers: Ray workers, each holding the model (default: one per GPU of the cluster,
            else one per two CPUs, at most one per batch).
        progress: called with ``(sentences done, sentences)``.

    Returns:
        one row per sentence × kind × layer × head: ``sentence`` (from 0), ``text`` and the
        columns of :data:`model.corpus.statistics.COLUMNS` (and ``span``), and in
        ``DataFrame.attrs["skipped"]`` the ``(sentence, message)`` of sentences left out.
    """
    import pandas as pd

    sentences = list(sentences)
    if engine not in ENGINES:
        raise ValueError(_("unknown engine {engine}: choose {engines}").format(
            engine=repr(engine), engines=" or ".join(ENGINES)))
    for name, value in (("batch_size", batch_size), ("workers", workers)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(_("{name} must be a whole number of at least 1, not {value}")
                             .format(name=name, value=repr(value)))
    if not sentences:
        raise ValueError(_("there are no sentences to run"))
    if engine == "local":
        from model import load

        model = load(spec, device=device, dtype=dtype)
        if progress is not None:
            progress(0, len(sentences))  # loaded: the run starts
        table, skipped = corpus_table(model, sentences, batch_size=batch_size, span=span,
                                      progress=progress)
        nothing_ran(table, skipped)
    else:
        table, skipped = _on_ray(spec, sentences, address=address, device=device, dtype=dtype,
                                 batch_size=batch_size, span=span, progress=progress,
                                 workers=workers)
    frame = pd.DataFrame(table)
    frame.insert(1, "text", np.asarray(sentences, dtype=object)[frame["sentence"].to_numpy()])
    frame.attrs["skipped"] = skipped
    return frame


def nothing_ran(table: dict[str, np.ndarray], skipped: list[tuple[int, str]]) -> None:
    """Raise ``ValueError`` with the first sentence's message when no sentence ran."""
    if not len(table["sentence"]):
        raise ValueError(_("no sentence could be run: sentence {index}: {error}").format(
            index=skipped[0][0] + 1, error=skipped[0][1]))


class _Worker:
    """A Ray Data worker: loads the model once, then computes the statistics of whole
    batches (each input row is one batch: its first index and its texts as JSON). A sentence
    left out comes back as one row with layer -1 and its message in ``error``."""

    def __init__(self, spec: str, device: str, span: Span | None, threads: int,
                 dtype: str = "auto"):
        from model import load

        torch.set_num_threads(threads)  # its share of the node's CPUs, not all of them
        self.model = load(spec, device=device, dtype=dtype)
        self.span = span

    def __call__(self, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        parts = []
        for start, texts in zip(rows["start"], rows["texts"]):
            texts = json.loads(texts)
            table, skipped = corpus_table(self.model, texts, batch_size=len(texts),
                                          span=self.span)
            table["error"] = np.full(len(table["sentence"]), "", dtype=object)
            parts.append((int(start), table))
            if skipped:
                n = len(skipped)
                failed = {key: np.full(n, np.nan) for key in table if key not in (
                    "sentence", "kind", "layer", "head", "queries", "error")}
                failed.update(sentence=np.array([i for i, _m in skipped]),
                              kind=np.full(n, "", dtype=object), layer=np.full(n, -1),
                              head=np.full(n, -1), queries=np.zeros(n, dtype=int),
                              error=np.array([m for _i, m in skipped], dtype=object))
                parts.append((int(start), {key: failed[key] for key in table}))
        return merge(parts, self.span)


def _on_ray(spec, sentences, *, address, device, batch_size, span, progress, workers,
            dtype="auto"):
    try:
        import ray
    except ImportError:
        raise ValueError(_("the Ray engine needs Ray: pip install 'ray[data]'")) from None
    if span is not None:
        span.compiled()
    if not ray.is_initialized():
        check_address(address)  # an address that cannot answer fails now, not after retries
        kwargs = {"address": address} if address else {}
        if address:  # a remote cluster: send this package (and its catalog) with the work
            root = Path(__file__).resolve().parents[1]  # the model package
            kwargs["runtime_env"] = {"py_modules": [str(root), str(root.parent / "i18n")]}
        ray.init(log_to_driver=False, logging_level=logging.WARNING, **kwargs)
    from ray.util.client import ray as client

    if client.is_connected():
        # Ray Client (ray://): Ray Data cannot drive a pipeline from a client, so the loop runs
        # as a task on the cluster, and its progress comes back through a small actor
        counter = ray.remote(_Count).options(num_cpus=0).remote()
        task = ray.remote(_gather).options(num_cpus=0).remote(
            spec, sentences, device=device, batch_size=batch_size, span=span, workers=workers,
            counter=counter, dtype=dtype)
        if progress is not None:
            progress(0, len(sentences))  # connected: the run starts
        try:
            while not ray.wait([task], timeout=1.0)[0]:
                if progress is not None:
                    progress(ray.get(counter.get.remote()), len(sentences))
            parts, skipped = ray.get(task)
        finally:  # interrupted or failed: nothing of this run is left on the cluster
            ray.cancel(task, force=True)
            ray.kill(counter)
        if progress is not None:
            progress(len(sentences), len(sentences))
    else:
        parts, skipped = _gather(spec, sentences, device=device, batch_size=batch_size,
                                 span=span, workers=workers, progress=progress, dtype=dtype)
    table = merge(parts, span)
    nothing_ran(table, skipped)
    # every sentence's rows come from one batch, in kind, layer and head order: ordering by
    # sentence alone (stably) restores the local table, whatever order batches came back in
    order = np.argsort(table["sentence"], kind="stable")
    return {key: value[order] for key, value in table.items()}, sorted(skipped)


class _Count:
    """How many sentences a Ray Client run has done (an actor the driver asks)."""

    def __init__(self):
        self.done = 0

    def set(self, done: int) -> None:
        self.done = done

    def get(self) -> int:
        return self.done


def _gather(spec, sentences, *, device, batch_size, span, workers, progress=None,
            counter=None, dtype="auto"):
    """The Ray Data pipeline of :func:`_on_ray`, run where the driver is (this process, or a
    task on the cluster under Ray Client, reporting to ``counter``): the parts of the table,
    with the sentences left out."""
    import ray

    if counter is not None:
        def progress(done: int, total: int) -> None:
            counter.set.remote(done)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # the caller's progress (tqdm, the page) is shown
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    chunks = [(start, sentences[start:start + batch_size])
              for start in range(0, len(sentences), batch_size)]
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0)) if device != "cpu" else 0
    cpus = max(1, int(resources.get("CPU", 1)))
    if workers is None:
        workers = gpus or max(1, cpus // 2)
    if gpus:  # one GPU per actor: more actors than GPUs would wait for ever
        workers = min(workers, gpus)
    workers = max(1, min(workers, len(chunks)))
    threads = max(1, cpus // workers)
    data = ray.data.from_items([{"start": start, "texts": json.dumps(list(texts))}
                                for start, texts in chunks])
    results = data.map_batches(
        _Worker, fn_constructor_kwargs={"spec": spec, "device": device, "span": span,
                                        "threads": threads, "dtype": dtype},
        batch_size=1, compute=ray.data.ActorPoolStrategy(size=workers),
        num_gpus=1 if gpus else 0, num_cpus=threads if not gpus else 1, batch_format="numpy")
    if progress is not None:
        progress(0, len(sentences))  # connected: the run starts
    parts, skipped, done = [], [], set()
    for part in results.iter_batches(batch_size=None, batch_format="numpy"):
        errors = part.pop("error")
        failed = part["layer"] < 0
        skipped.extend((int(i), str(m)) for i, m in zip(part["sentence"][failed],
                                                         errors[failed]))
        parts.append((0, {key: value[~failed] for key, value in part.items()}))
        done.update(part["sentence"].tolist())
        if progress is not None:
            progress(len(done), len(sentences))
    return parts, skipped


def write_table(frame, path: str | Path) -> Path:
    """Write a corpus table as ``.parquet`` or ``.csv`` (by the path's ending).

    Raises:
        ValueError: another ending.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        frame.to_parquet(path, index=False)
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        raise ValueError(_("--out must end in .parquet or .csv, not {suffix}").format(
            suffix=repr(suffix or path.name)))
    return path


CLIENT_PORT, GCS_PORT = 10001, 6379  # Ray's own defaults for ray://HOST and HOST
CONNECT_SECONDS = 3.0


def cluster_endpoint(address: str | None) -> tuple[str, int] | None:
    """The ``(host, port)`` that ``address`` names (``ray://HOST:PORT`` or ``HOST:PORT``,
    IPv6 hosts in brackets), or None where it names no remote cluster (none, ``auto``,
    ``local``, or another scheme, left to Ray).

    Raises:
        ValueError: a port that is not a number from 1 to 65535.
    """
    text = (address or "").strip()
    if not text or text in ("auto", "local"):
        return None
    client = text.startswith("ray://")
    if client:
        text = text[len("ray://"):]
    elif "://" in text:
        return None
    text = text.split("/", 1)[0]
    if text.startswith("[") and "]" in text:  # [::1]:6379
        host, _bracket, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:  # no port (or a bare IPv6 address): Ray's default port
        host, port = text, ""
    port = port or str(CLIENT_PORT if client else GCS_PORT)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(_("--address {address} is not HOST:PORT or ray://HOST:PORT (or auto)")
                         .format(address=address.strip()))
    return host, int(port)


def check_address(address: str | None, seconds: float = CONNECT_SECONDS) -> None:
    """Fail at once, with one message, when ``address`` names a Ray cluster that cannot be
    used: Ray Client (``ray://``) not installed, or nothing answering at its host and port
    within ``seconds`` (Ray itself would retry for minutes).

    Raises:
        ValueError: either of those.
    """
    endpoint = cluster_endpoint(address)
    if endpoint is None:
        return
    if address.strip().startswith("ray://"):
        try:
            import grpc  # noqa: F401  (what Ray Client needs, as Ray itself checks)
        except ImportError:
            raise ValueError(_("--address {address} needs Ray Client: pip install "
                               "'ray[client]'").format(address=address.strip())) from None
    try:
        socket.create_connection(endpoint, timeout=seconds).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise ValueError(_("cannot reach the Ray cluster at {address}: {reason}").format(
            address=address.strip(), reason=" ".join(reason.split()))) from None


def default_address() -> str | None:
    """The Ray cluster named by ``RAY_ADDRESS``, if any."""
    return os.environ.get("RAY_ADDRESS") or None
