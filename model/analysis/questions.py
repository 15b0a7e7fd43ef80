"""A live class's questions, built from the current trace and never hard-coded: what a student
predicts before the model reveals it (app_pages/live).

Each builder returns a :class:`Prepared` question: its kind (``choice``: tap one option;
``number``), prompt, options and the model's answer (``truth``, JSON: ``answer`` the option's
index or the number; ``absolute`` or relative ``tolerance`` for a number; and what the reveal
draws beside the class's votes: ``weights`` per option where the answer is a row of
attention).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from i18n import _
from model.analysis.cuts import query_rows, writes_words
from model.meta import kind_name
from model.reading.blocks import assemble, region
from model.trace import AttentionTrace

MAX_OPTIONS = 64  # a token question on a longer sentence asks about a window of it
MAX_MASK_CELLS = 4096 * 4096  # the mask question reads the whole mask (n² booleans)


@dataclass(frozen=True)
class Prepared:
    """One question ready to ask: ``truth`` is what the reveal shows."""

    kind: str
    prompt: str
    options: tuple[str, ...] = ()
    truth: dict[str, Any] = field(default_factory=dict)


def token_options(tokens, first: int = 0) -> tuple[str, ...]:
    """The tokens as tap targets: a token that occurs twice is told apart by its position
    (``first``: the position of the first of ``tokens`` in the whole axis, as pages number)."""
    tokens = [str(token) for token in tokens]
    repeated = {token for token, count in Counter(tokens).items() if count > 1}
    return tuple(f"{token} ({first + index})" if token in repeated else token
                 for index, token in enumerate(tokens))


def _window(n: int, centre: int) -> range:
    """At most :data:`MAX_OPTIONS` positions around ``centre``."""
    start = min(max(0, centre - MAX_OPTIONS // 2), max(0, n - MAX_OPTIONS))
    return range(start, min(n, start + MAX_OPTIONS))


def _rows(trace: AttentionTrace, kind: str, layer: int, head: int | None,
          rows: range) -> np.ndarray:
    """``[row, key]`` weights of some query rows over every key, read at once: of one head, or
    (``head`` None) the mean of the layer's heads (never the whole head: n² at a long input)."""
    n_keys = len(trace.axes(kind)[1])
    if head is not None:
        return region(trace, kind, layer, head, rows, range(n_keys)).astype(np.float64)
    every = assemble(trace.blocks(kind, layer, None, rows), trace.n_heads, rows, n_keys,
                     range(n_keys)).astype(np.float64)
    return every.mean(axis=0)


def _asker(trace: AttentionTrace, kind: str) -> list[str]:
    """How each query row is named in a question: its token, or in the decoder of an
    encoder-decoder the word it writes (as the pages name the rows)."""
    return list(query_rows(trace, kind).labels)


def _most_attended(trace: AttentionTrace, kind: str, layer: int, head: int | None, query: int,
                   row: np.ndarray, askers: list[str]) -> Prepared:
    keys = trace.axes(kind)[1]
    # the options are the keys around the query's position, chosen without looking at the
    # answer (a window centred on the answer would give it away: always the middle option)
    centre = min(query, len(keys) - 1) if len(keys) > MAX_OPTIONS else 0
    shown = _window(len(keys), centre)
    answer = int(np.argmax(row))
    if answer not in shown:
        raise ValueError(_("the largest weight of this row lies outside the {count} keys a "
                           "question offers").format(count=MAX_OPTIONS))
    weights = row[shown.start:shown.stop]
    writes = writes_words(trace, kind)
    if head is not None:
        prompt = (_("Layer {layer}, head {head} ({kind}): writing “{token}”, which token does "
                    "the decoder attend to most?") if writes else
                  _("Layer {layer}, head {head} ({kind}): which token does “{token}” attend "
                    "to most?"))
    else:
        prompt = (_("Layer {layer}, the average of its heads ({kind}): writing “{token}”, "
                    "which token does the decoder attend to most?") if writes else
                  _("Layer {layer}, the average of its heads ({kind}): which token does "
                    "“{token}” attend to most?"))
    return Prepared(
        "choice",
        prompt.format(layer=layer, head=head, kind=kind_name(kind), token=askers[query]),
        token_options(keys[shown.start:shown.stop], shown.start),
        {"answer": answer - shown.start, "weights": [round(float(w), 6) for w in weights],
         "kind": kind, "layer": layer, "head": head, "query": query,
         "first_key": shown.start})


def most_attended(trace: AttentionTrace, kind: str, layer: int, head: int | None,
                  query: int) -> Prepared:
    """"Which token does «query» attend to most?" in one head (``head`` None: the average of
    the layer's heads): tap a key token. The reveal draws the real weights of that row beside
    the votes. A row whose largest weight lies outside the keys offered is refused."""
    queries = trace.axes(kind)[0]
    if not 0 <= query < len(queries):
        raise ValueError(_("query {query} is not a position of the {count} queries").format(
            query=query, count=len(queries)))
    row = _rows(trace, kind, layer, head, range(query, query + 1))[0]
    return _most_attended(trace, kind, layer, head, query, row, _asker(trace, kind))


def linking_head(trace: AttentionTrace, kind: str, layer: int, query: int,
                 key: int) -> Prepared:
    """"Which head links «query» to «key» most?": tap a head of the layer. The reveal draws
    every head's weight of that cell."""
    queries, keys = trace.axes(kind)
    if not (0 <= query < len(queries) and 0 <= key < len(keys)):
        raise ValueError(_("({query}, {key}) is not a cell of this attention").format(
            query=query, key=key))
    if not 2 <= trace.n_heads <= MAX_OPTIONS:
        raise ValueError(_("a question on heads needs 2 to {count} heads").format(
            count=MAX_OPTIONS))
    rows = range(query, query + 1)  # one row of every head, not every head whole
    cell = assemble(trace.blocks(kind, layer, None, rows), trace.n_heads, rows, len(keys),
                    range(key, key + 1))[:, 0, 0].astype(float).tolist()
    return Prepared(
        "choice",
        _("Layer {layer} ({kind}): which head links “{query}” to “{key}” most?").format(
            layer=layer, kind=kind_name(kind), query=_asker(trace, kind)[query], key=keys[key]),
        tuple(_("head {head}").format(head=head) for head in range(trace.n_heads)),
        {"answer": int(np.argmax(cell)), "weights": [round(w, 6) for w in cell],
         "kind": kind, "layer": layer, "query": query, "key": key})


def row_questions(trace: AttentionTrace, kind: str, layer: int, head: int | None,
                  rows: range | None = None) -> list[Prepared]:
    """":func:`most_attended`" for each row of a heatmap (``rows``: those shown; the first
    :data:`MAX_OPTIONS` of them), read in one pass, so that the teacher can ask about any of
    them; a row whose answer lies outside the keys offered is left out."""
    n_queries = len(trace.axes(kind)[0])
    rows = range(n_queries) if rows is None else rows
    rows = range(max(0, rows.start), min(n_queries, rows.stop, max(0, rows.start) + MAX_OPTIONS))
    if not len(rows):
        return []
    weights, askers, asked = _rows(trace, kind, layer, head, rows), _asker(trace, kind), []
    for row, query in zip(weights, rows):
        try:
            asked.append(_most_attended(trace, kind, layer, head, query, row, askers))
        except ValueError:
            continue
    return asked


def sharpest_link(trace: AttentionTrace, kind: str, layer: int, query: int) -> Prepared:
    """":func:`linking_head`" for the cell of row ``query`` that one head of the layer weighs
    most (leaving out the first key, where heads park their weight, when there are others)."""
    n_keys = len(trace.axes(kind)[1])
    rows = range(query, query + 1)
    every = assemble(trace.blocks(kind, layer, None, rows), trace.n_heads, rows, n_keys,
                     range(n_keys))[:, 0, :].astype(np.float64)
    rest = every.copy()
    rest[:, 0] = -1.0
    if n_keys > 2 and rest.max() > 0:  # a causal first row sees the first key only
        every = rest
    key = int(np.unravel_index(int(np.argmax(every)), every.shape)[1])
    return linking_head(trace, kind, layer, query, key)


def softmax_first(scores) -> Prepared:
    """"What weight does softmax give the first score?" (seed 4.4: [8, −3] → 1.000)."""
    scores = [float(score) for score in scores]
    if len(scores) < 2 or not all(math.isfinite(score) for score in scores):
        raise ValueError(_("softmax needs two or more finite scores"))
    exps = np.exp(np.asarray(scores) - max(scores))
    weight = float(exps[0] / exps.sum())
    return Prepared(
        "number",
        _("softmax({scores}): what weight does the first score get (0 to 1)?").format(
            scores="[" + ", ".join(f"{score:g}" for score in scores) + "]"),
        truth={"answer": round(weight, 6), "absolute": 0.01})


def scaled_weight(scores, d_k: int) -> Prepared:
    """"After ÷√d_k, what weight does the first key get?" (seed 4.3: d_k = 2)."""
    scores = [float(score) for score in scores]
    if d_k < 1 or len(scores) < 2 or not all(math.isfinite(score) for score in scores):
        raise ValueError(_("scaling needs d_k ≥ 1 and two or more finite scores"))
    scaled = np.asarray(scores) / math.sqrt(d_k)
    exps = np.exp(scaled - scaled.max())
    weight = float(exps[0] / exps.sum())
    return Prepared(
        "number",
        _("Scores {scores} with d_k = {d_k}: after ÷√d_k and softmax, what weight does the "
          "first key get (0 to 1)?").format(
            scores="[" + ", ".join(f"{score:g}" for score in scores) + "]", d_k=d_k),
        truth={"answer": round(weight, 6), "absolute": 0.01,
               "scaled": [round(float(value), 4) for value in scaled]})


def kv_cache_megabytes(trace: AttentionTrace, bytes_per_value: int = 2) -> Prepared:
    """"How many MB does the KV cache of this text take?" for the trace's model: 2 (K and V)
    × decoder layers × K/V heads × d_head × tokens × bytes per value."""
    dims = trace.dims
    kinds = [name for name in trace.names if name.startswith("decoder.self")]
    if dims is None or not kinds:
        raise ValueError(_("a KV-cache question needs a decoder whose sizes are known"))
    tokens = len(trace.axes(kinds[0])[1])
    layers = dims.n_decoder_layers
    values = 2 * layers * dims.n_kv_heads * dims.d_head * tokens
    megabytes = values * bytes_per_value / 1e6
    return Prepared(
        "number",
        _("{model}: {layers} layers, {kv_heads} K/V heads of d_head = {d_head}, {tokens} "
          "tokens in {bytes}-byte values. How many MB does the KV cache hold?").format(
            model=trace.model, layers=layers, kv_heads=dims.n_kv_heads, d_head=dims.d_head,
            tokens=tokens, bytes=bytes_per_value),
        truth={"answer": round(megabytes, 6), "tolerance": 0.05, "values": values})


def forbidden_cells(trace: AttentionTrace, kind: str, layer: int = 0) -> Prepared:
    """"How many cells of this mask are forbidden?" counted in the trace's own mask."""
    n_queries, n_keys = (len(axis) for axis in trace.axes(kind))
    if n_queries * n_keys > MAX_MASK_CELLS:
        raise ValueError(_("a question on the mask counts at most {count:,} cells").format(
            count=MAX_MASK_CELLS))
    mask = np.asarray(trace.mask(kind, layer), dtype=bool)
    allowed = int(mask.sum())
    rows, cols = mask.shape
    return Prepared(
        "number",
        _("The {kind} attention of this text is {rows} × {cols} cells. How many of them does "
          "the mask forbid?").format(kind=kind_name(kind), rows=rows, cols=cols),
        truth={"answer": rows * cols - allowed, "absolute": 0})


def correct(prepared_truth: dict[str, Any], kind: str, value: float) -> bool:
    """Whether ``value`` is the model's answer: the option, or a number within the truth's
    ``absolute`` error or its relative ``tolerance``."""
    answer = prepared_truth["answer"]
    if kind == "choice":
        return int(value) == int(answer)
    error = abs(float(value) - float(answer))
    return (error <= float(prepared_truth.get("absolute", 0.0))
            or error <= float(prepared_truth.get("tolerance", 0.0)) * abs(float(answer)))
