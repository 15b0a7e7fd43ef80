"""Numbers of the lesson §3.4 step 3 and §3.8, generation and the KV cache (numpy only).

- :func:`kv_growth` reads the cache sizes a :class:`~model.interface.Generation` measured at
  every step, with what they would be without grouped-query attention, and the formula
  ``2 × layers × kv_heads × d_head × tokens × bytes`` they obey;
- :func:`pattern_at_step` cuts the growing lower-triangular pattern of one step from the
  generation's trace, and :func:`next_words` the step's most probable next tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from i18n import _
from model.analysis.cuts import query_rows
from model.interface import Generation
from model.meta import ModelDims


@dataclass(frozen=True)
class KVGrowth:
    """The KV cache after every step of a generation.

    Attributes:
        tokens: ``[step]`` tokens each decoder layer has cached after the step.
        per_layer: ``[step, layer]`` bytes of each layer's self-attention keys and values,
            measured from the cache tensors.
        total: ``[step]`` bytes of every layer's self-attention cache (measured).
        formula: ``[step]`` bytes that ``2 × layers × kv_heads × d_head × tokens × bytes``
            gives.
        without_gqa: ``[step]`` bytes if every query head had its own K/V head (the measured
            total × query heads per K/V head).
        cross: bytes of every layer's cross-attention keys and values, computed once from the
            encoder's output (0 for a decoder-only model).
        layers, kv_heads, n_heads, d_head, bytes_per_element: the formula's factors.
    """

    tokens: np.ndarray
    per_layer: np.ndarray
    total: np.ndarray
    formula: np.ndarray
    without_gqa: np.ndarray
    cross: int
    layers: int
    kv_heads: int
    n_heads: int
    d_head: int
    bytes_per_element: int

    @property
    def per_token(self) -> int:
        """Bytes one more token adds to the cache of every layer: ``2 × layers × kv_heads ×
        d_head × bytes``."""
        return 2 * self.layers * self.kv_heads * self.d_head * self.bytes_per_element

    @property
    def group(self) -> int:
        """Query heads sharing one K/V head (1 without grouped-query attention)."""
        return self.n_heads // self.kv_heads


def kv_formula(dims: ModelDims, tokens, bytes_per_element: int) -> np.ndarray:
    """``2 × layers × kv_heads × d_head × tokens × bytes`` for the decoder's self-attention
    (``tokens`` a number or an array of them)."""
    return (2 * dims.n_decoder_layers * dims.n_kv_heads * dims.d_head
            * np.asarray(tokens, dtype=np.int64) * bytes_per_element)


def kv_growth(generation: Generation, dims: ModelDims) -> KVGrowth:
    """The cache sizes measured at every step of ``generation`` by the model ``dims``
    describes, beside the formula and the size without grouped-query attention."""
    per_layer = np.asarray(generation.self_cache_bytes, dtype=np.int64)
    if per_layer.shape[1] != dims.n_decoder_layers:
        raise ValueError(f"{per_layer.shape[1]} cached layers for a model of "
                         f"{dims.n_decoder_layers} decoder layers")
    total = per_layer.sum(axis=1)
    return KVGrowth(
        tokens=np.asarray(generation.cached_tokens, dtype=np.int64), per_layer=per_layer,
        total=total, formula=kv_formula(dims, generation.cached_tokens,
                                        generation.bytes_per_element),
        without_gqa=total * dims.group, cross=int(np.sum(generation.cross_cache_bytes)),
        layers=dims.n_decoder_layers, kv_heads=dims.n_kv_heads, n_heads=dims.n_heads,
        d_head=dims.d_head, bytes_per_element=generation.bytes_per_element)


@dataclass(frozen=True)
class PatternStep:
    """Decoder self-attention as it stands after one generation step.

    Attributes:
        weights: ``[token, token]``: the rows computed by steps 1..s, NaN in the rows later
            steps compute.
        allowed: ``[token, token]`` the causal mask.
        row_labels, row_hover, row_title: how the rows are named (by the word each writes for
            an encoder-decoder, else by their own token; :func:`~.views.query_rows`).
        key_labels: the tokens read (keys).
        first_new, rows: the rows this step added are ``first_new .. rows - 1``.
        read, written: the token the step read last and the token it wrote.
        probability: the probability of the token written.
    """

    weights: np.ndarray
    allowed: np.ndarray
    row_labels: list[str]
    row_hover: list[str]
    row_title: str
    key_labels: list[str]
    first_new: int
    rows: int
    read: str
    written: str
    probability: float


def pattern_at_step(generation: Generation, step: int, layer: int,
                    head: int | None = None) -> PatternStep:
    """The causal pattern of one decoder layer after step ``step`` (1-based).

    Args:
        head: one head, or None for the layer's average over heads.
    """
    n_steps = len(generation.steps)
    if not 1 <= step <= n_steps:
        raise ValueError(_("step {step} is out of range 1..{last}").format(step=step,
                                                                            last=n_steps))
    trace = generation.trace
    weights = np.array(trace.head_or_mean("decoder.self", layer, head), dtype=np.float64)
    rows = int(generation.cached_tokens[step - 1])
    first_new = int(generation.cached_tokens[step - 2]) if step > 1 else 0
    weights[rows:] = np.nan  # rows that later steps compute
    names = query_rows(trace, "decoder.self")
    keys = list(trace.axes("decoder.self")[1])
    labels = list(names.labels)
    if len(generation.steps) == len(keys) and not trace.family.single_stack:
        # The rows of the teacher-forced pass write what the steps wrote, <eos> included.
        labels = [s.token for s in generation.steps]
    chosen = generation.steps[step - 1]
    return PatternStep(weights=weights, allowed=trace.mask("decoder.self", layer),
                       row_labels=labels, row_hover=list(names.hover), row_title=names.title,
                       key_labels=keys, first_new=first_new, rows=rows,
                       read=keys[rows - 1], written=chosen.token,
                       probability=chosen.probability)


def next_words(generation: Generation, step: int) -> tuple[list[str], list[float], int | None]:
    """The most probable next tokens at ``step`` (1-based), their probabilities, and the index
    of the token written among them (None when it is not)."""
    chosen = generation.steps[step - 1]
    words = [word for word, _p in chosen.top_k]
    probabilities = [p for _word, p in chosen.top_k]
    return words, probabilities, words.index(chosen.token) if chosen.token in words else None
