"""What a page draws, cut from a trace (numpy only): a layer and its chosen head (Explore), a
window of tokens (head view, causal mask), one generation step (Translate).

Pages call these and hand the arrays to viz/ instead of slicing and reducing arrays themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from i18n import _
from model.reading.blocks import assemble
from model.trace import AttentionTrace


@dataclass(frozen=True)
class Rows:
    """How the query rows of an attention kind are named.

    Decoder rows of an encoder-decoder model are named by the word they write: row t reads
    input t (``<bos>``, 猫, …) and chooses word t + 1, so the cross-attention row that chose 垫子
    is labelled 垫子, on every page. The last row writes the end token (or, where the trace
    holds no steps, something unknown: ``…``). Other rows are named by their own token.

    Attributes:
        labels: one tick label per row.
        hover: what hovering a row says (position, word written and word read).
        special: rows drawn as special tokens (grey italic).
        title: the axis title.
    """

    labels: list[str]
    hover: list[str]
    special: list[int]
    title: str


def writes_words(trace: AttentionTrace, name: str) -> bool:
    """True when ``name``'s rows are named by the word they write (the decoder of an
    encoder-decoder model)."""
    return not trace.family.single_stack and name.startswith("decoder.")


def query_rows(trace: AttentionTrace, name: str) -> Rows:
    """The names of ``name``'s query rows (see :class:`Rows`)."""
    q_tokens = trace.axes(name)[0]
    special = trace.special(name)[0]
    if not writes_words(trace, name):
        return Rows(list(q_tokens), [f"{i}: {t}" for i, t in enumerate(q_tokens)], special,
                    _("query (attending)"))
    n = len(q_tokens)
    written = written_words(trace) if len(trace.steps) == n else [*q_tokens[1:], "…"]
    writes = _("{position}: writes {written} (reads {read})")
    hover = [writes.format(position=t, written=w, read=r)
             for t, (w, r) in enumerate(zip(written, q_tokens))]
    rows_special = [t for t in range(n - 1) if t + 1 in special] + [n - 1]
    return Rows(written, hover, rows_special, _("query: the word being written"))


SENTENCE_ENDS = {".", "。", "!", "?", "！", "？", "[SEP]", "</s>", "<eos>"}


def sentence_split(tokens, special=()) -> int:
    """Where the first sentence ends (the position after its full stop, question mark or
    separator) when words follow it; else the middle: a default cut between "sentence A" and
    "sentence B" that does not fall mid-sentence.

    Args:
        tokens: the axis's tokens.
        special: positions of special tokens (``[CLS]``, ``[SEP]``): they are not words.
    """
    tokens = [str(t).strip() for t in tokens]
    special = set(special)
    words = [i for i, t in enumerate(tokens) if i not in special and t not in SENTENCE_ENDS]
    ends = [i + 1 for i, t in enumerate(tokens)
            if t in SENTENCE_ENDS and any(w > i for w in words)]
    if not ends:
        return len(tokens) // 2
    cut = ends[0]
    while cut not in words:  # a separator after the stop belongs to the first sentence
        cut += 1
    return cut


def boundary_label(tokens, i: int) -> str:
    """A span boundary as a reader sees it: ``"3 · sat"`` (before token 3) or ``"end"`` (in
    the current language)."""
    return _("end") if i >= len(tokens) else f"{i} · {tokens[i]}"


FIT_ABOVE = 32  # keys: past this many, rows spread thin and colours are fitted by default


def colour_ceiling(peak: float, n_keys: int, fit: bool | None = None) -> tuple[float, bool]:
    """The weight drawn darkest in a layer's heatmaps, and whether it was fitted.

    Args:
        peak: the layer's largest weight away from the first query and first key
            (:attr:`model.reading.blocks.LayerSummary.peak`): the first token's row is all 1 in a
            causal model and its column is often an attention sink.
        n_keys: the keys of the attention kind.
        fit: fit the colours to ``peak`` (long inputs spread each row thin, so every weight
            is small); None fits when there are more than :data:`FIT_ABOVE` keys.

    Returns:
        ``(zmax, fitted)``: 1 unless fitted; weights above a fitted ceiling are drawn
        darkest too.
    """
    fit = n_keys > FIT_ABOVE if fit is None else bool(fit)
    return (max(float(peak), 1e-6) if fit else 1.0), fit


def shared_ceiling(traces: Sequence[AttentionTrace], name: str,
                   peaks: Callable[[], Iterable[float]]) -> tuple[float, bool]:
    """One :func:`colour_ceiling` for heads of several traces drawn side by side (one scale for
    the heads compared): 1, or past :data:`FIT_ABOVE` keys in the longest trace the largest of
    their layers' peaks.

    Args:
        peaks: called only when the colours are fitted: each trace's layer peak
            (:attr:`model.reading.blocks.LayerSummary.peak`), which may cost a pass over the
            layer.
    """
    n_keys = max(len(trace.axes(name)[1]) for trace in traces)
    if n_keys <= FIT_ABOVE:
        return 1.0, False
    return colour_ceiling(max(peaks()), n_keys)


def stage_weights(traces: Sequence[AttentionTrace], name: str, layer: int,
                  head: int | None) -> np.ndarray:
    """One head (None: the heads' mean) of the same layer in several traces of one input,
    e.g. stages of a training run: float32 ``[trace, query, key]``."""
    return np.stack([trace.head_or_mean(name, layer, head) for trace in traces])


@dataclass(frozen=True)
class Window:
    """A stretch of query tokens (and, for self-attention, the same stretch of keys).

    Attributes:
        queries, keys: slices of the query and key axes (``queries.start``: the first query's
            position in the input).
        query_tokens, key_tokens: the rows' names (:func:`query_rows`) and the key tokens in
            the window.
        query_labels, key_labels: what each row's and column's hover says, positions counted in
            the whole input.
        query_special, key_special: positions of special tokens inside the window.
    """

    queries: slice
    keys: slice
    query_tokens: list[str]
    key_tokens: list[str]
    query_labels: list[str]
    key_labels: list[str]
    query_special: list[int]
    key_special: list[int]


def window(trace: AttentionTrace, name: str, start: int, stop: int) -> Window:
    """Queries ``start..stop`` of ``name``; keys the same stretch for self-attention and every
    source key for cross-attention (a target word may look anywhere in the source)."""
    q_tokens, k_tokens = trace.axes(name)
    if start < 0 or stop <= start:
        raise ValueError(_("the window {start}..{stop} is empty").format(start=start, stop=stop))
    queries = slice(start, min(stop, len(q_tokens)))
    keys = slice(start, min(stop, len(k_tokens))) if name.endswith(".self") else slice(
        0, len(k_tokens))
    return _window(trace, name, queries, keys)


def region_window(trace: AttentionTrace, name: str, queries: range, keys: range) -> Window:
    """Any stretch of queries × any stretch of keys of ``name`` (Explore's zoom), ranges of
    step 1 inside the axes."""
    return _window(trace, name, slice(queries.start, queries.stop), slice(keys.start, keys.stop))


def window_mask(trace: AttentionTrace, name: str, layer: int, view: Window) -> np.ndarray:
    """The mask of ``layer`` inside ``view``: bool ``[query, key]``."""
    return trace.mask(name, layer)[view.queries, view.keys]


def _window(trace: AttentionTrace, name: str, queries: slice, keys: slice) -> Window:
    k_tokens = trace.axes(name)[1]
    rows = query_rows(trace, name)
    k_special = trace.special(name)[1]
    key_labels = [f"{keys.start + j}: {t}" for j, t in enumerate(k_tokens[keys])]
    return Window(queries, keys, rows.labels[queries], list(k_tokens[keys]),
                  rows.hover[queries], key_labels, _inside(rows.special, queries),
                  _inside(k_special, keys))


def _inside(positions, cut: slice) -> list[int]:
    """``positions`` that fall in ``cut``, counted from its start."""
    return [p - cut.start for p in positions if cut.start <= p < cut.stop]


def window_weights(trace: AttentionTrace, name: str, layer: int, view: Window) -> np.ndarray:
    """Every head of ``layer`` inside the window: float32 ``[head, query, key]``, computed
    for the window's query rows only (:mod:`model.reading.blocks`), never the whole layer."""
    rows = range(view.queries.start, view.queries.stop)
    keys = range(view.keys.start, view.keys.stop)
    n_keys = len(trace.axes(name)[1])
    return assemble(trace.blocks(name, layer, rows=rows), trace.n_heads, rows, n_keys, keys)


@dataclass(frozen=True)
class MaskPanels:
    """What the causal-mask view draws inside a window, each ``[query, key]``: the scores, the
    mask and the weights (viz derives the third panel, the masked scores, from the first two)."""

    scores: np.ndarray
    allowed: np.ndarray
    weights: np.ndarray


def mask_panels(trace: AttentionTrace, name: str, layer: int, head: int,
                view: Window) -> MaskPanels:
    """Scores before the mask, the mask and the weights of one head, inside ``view``.

    Raises:
        ValueError: the trace holds no scores (a loaded export).
    """
    cut = (view.queries, view.keys)
    return MaskPanels(trace.scores(name, layer, head)[cut], window_mask(trace, name, layer, view),
                      trace.weights(name, layer, head)[cut])


@dataclass(frozen=True)
class GenerationStep:
    """What the decoder saw and chose at one generation step (seed 3.4 step 3).

    Attributes:
        step: 1-based; at step t the decoder has written t − 1 words and chooses word t.
        rows: the decoder's rows, named by the word each writes (:func:`query_rows`): every
            word written, then ``<eos>``.
        self_weights, self_allowed: masked self-attention up to this step, ``[step, step]``:
            rows ``rows.labels[:step]``, keys ``self_keys``; None for a decoder without
            self-attention (a recurrent one carries a state instead).
        self_keys: the decoder's input tokens up to this step (``<bos>``, 猫, …).
        cross_row: this step's cross-attention over the source, ``[source]``.
        cross_peak: the source position it weighs most.
        source_tokens: the source words.
        alignment: cross-attention of every step, ``[step, source]``; its rows are ``rows``.
        top_words, top_probabilities: the step's most probable next words.
        top_chosen: the index in ``top_words`` of the word written (None if not among them).
    """

    step: int
    rows: Rows
    self_weights: np.ndarray | None
    self_allowed: np.ndarray | None
    self_keys: list[str]
    cross_row: np.ndarray
    cross_peak: int
    source_tokens: list[str]
    alignment: np.ndarray
    top_words: list[str]
    top_probabilities: list[float]
    top_chosen: int | None

    @property
    def chosen(self) -> str:
        """The word written at this step."""
        return self.rows.labels[self.step - 1]

    @property
    def so_far(self) -> list[str]:
        """The words written before this step."""
        return self.rows.labels[:self.step - 1]


def written_words(trace: AttentionTrace) -> list[str]:
    """The words a traced translation wrote, one per step, ending with ``<eos>``."""
    return [step.token for step in trace.steps]


def generation_step(trace: AttentionTrace, step: int, layer: int,
                    head: int | None = None) -> GenerationStep:
    """Step ``step`` (1-based) of a traced translation, for one decoder layer.

    Args:
        head: one head, or None for the average over the layer's heads.
    """
    if not trace.steps:
        raise ValueError(_("{model} generated nothing: there are no steps to show").format(
            model=trace.model))
    if not 1 <= step <= len(trace.steps):
        raise ValueError(_("step {step} is out of range 1..{last}").format(
            step=step, last=len(trace.steps)))
    t = step - 1  # the query row that writes word t + 1
    rows = query_rows(trace, "decoder.cross")
    chosen = rows.labels[t]
    has_self = "decoder.self" in trace.names  # a recurrent decoder has none
    self_w = trace.head_or_mean("decoder.self", layer, head) if has_self else None
    cross_w = trace.head_or_mean("decoder.cross", layer, head)
    top = trace.steps[t].top_k
    words = [word for word, _probability in top]
    return GenerationStep(
        step=step, rows=rows,
        self_weights=self_w[:step, :step] if has_self else None,
        self_allowed=trace.mask("decoder.self", layer)[:step, :step] if has_self else None,
        self_keys=list(trace.target_tokens[:step]), cross_row=cross_w[t],
        cross_peak=int(cross_w[t].argmax()), source_tokens=list(trace.source_tokens),
        alignment=cross_w, top_words=words, top_probabilities=[p for _word, p in top],
        top_chosen=words.index(chosen) if chosen in words else None)


def row_shortfall(weights: np.ndarray, allowed: np.ndarray) -> float:
    """The most any row of one exact head ``[query, key]`` that may attend somewhere sums short
    of 1: the weight a learned attention sink (gpt-oss, Granite's sliding-window models, a logit
    with no token) or keys that are not tokens (DeepSeek-V4's compressed keys) took from it. 0
    for heads whose rows sum to 1."""
    live = allowed.any(axis=1)
    if not live.any():
        return 0.0
    return float(max(0.0, 1.0 - weights[live].sum(axis=1, dtype=np.float64).min()))
