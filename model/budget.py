"""How much memory a trace of n tokens needs: each adapter's ``memory_needed`` estimate, which a
server checks against its limits before a model runs (:mod:`app_pages.cache.limits`).

The estimate follows what the code holds at its peak, in three parts:

- **kept**: what the trace keeps. Dense traces (the own models) keep every head's weights and
  scores, ``[layer, head, query, key]`` float32 twice; lazy traces (Hugging Face checkpoints)
  keep each layer's queries and keys, ``[head, token, d_head]`` float32.
- **forward**: what the forward pass holds besides. The own models' hooks hold the same arrays
  as torch tensors while they are copied into the trace (as much again as kept); fused
  attention materialises at most one layer's ``[head, query, key]`` scores and weights.
- **page**: one layer of every head computed for a page (the layer view: weights, their
  logits and exponentials, the pooled float64 copy), :data:`PAGE_BYTES_PER_CELL` per cell,
  and the page's figures (:data:`PAGE_FIGURES`: each chart is bounded by
  :data:`FIGURE_BYTES`, long inputs drawn in blocks).

Estimates are upper bounds of the measured peaks (``python -m bench.request_memory``); the
peak of a request is ``kept + max(forward, page)`` plus activations, masks and token strings,
and a margin of a quarter.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.meta import Family, ModelDims

FLOAT32 = 4
# Bytes per [query, key] cell of one head held while a page computes a layer (float32 weights,
# logits and exponentials, float64 pooled copies).
PAGE_BYTES_PER_CELL = 20
# Bytes per [query, key] cell of one head held by fused attention in the forward pass.
FORWARD_BYTES_PER_CELL = 2 * FLOAT32
# The most one chart may send to the browser (the app refuses a larger one with a message);
# its figures are bounded well below it (a head drawn in at most 256 × 256 cells: under 1 MB).
FIGURE_BYTES = 8 << 20
# A page's figures as the server holds them: up to four charts of a head each (drawn in at most
# 256 × 256 cells, float32: under 1 MB sent), each as Plotly objects, its JSON and Streamlit's
# message (about three copies), with room to spare.
PAGE_FIGURES = 16 * 1024 ** 2
# Bytes of any request besides its attention: token strings, scaffolding, and its figures.
OVERHEAD = 16 * 1024 ** 2 + PAGE_FIGURES
# Measured peaks vary from run to run (the allocator, threads): the estimate adds a quarter.
MARGIN = 1.25


@dataclass(frozen=True)
class Lengths:
    """Token counts of one request: ``source`` (the whole input of a single-stack model) and
    ``target`` (encoder-decoder: the decoder's tokens, the start token included; else 0)."""

    source: int
    target: int = 0

    @property
    def longest(self) -> int:
        return max(self.source, self.target)


def _cells(dims: ModelDims, family: Family, n: Lengths) -> dict[str, tuple[int, int, int]]:
    """``{kind: (layers, queries, keys)}`` of every attention kind of a run."""
    if family is Family.ENCODER_ONLY:
        return {"encoder.self": (dims.n_encoder_layers, n.source, n.source)}
    if family is Family.DECODER_ONLY:
        return {"decoder.self": (dims.n_decoder_layers, n.source, n.source)}
    return {"encoder.self": (dims.n_encoder_layers, n.source, n.source),
            "decoder.self": (dims.n_decoder_layers, n.target, n.target),
            "decoder.cross": (dims.n_decoder_layers, n.target, n.source)}


def _page(dims: ModelDims, kinds: dict) -> int:
    return max(dims.n_heads * q * k for _layers, q, k in kinds.values()) * PAGE_BYTES_PER_CELL


def _overhead(dims: ModelDims, n: Lengths) -> int:
    """Tokens, ids, masks and the forward pass's activations (a few [token, d_ff] arrays)."""
    return OVERHEAD + (n.source + n.target) * (dims.d_ff + dims.d_model) * 4 * FLOAT32 \
        + n.longest ** 2 * 3


def dense_bytes(dims: ModelDims, family: Family, n: Lengths) -> int:
    """Peak bytes of a trace that keeps every weight and score (the own models)."""
    kinds = _cells(dims, family, n)
    kept = sum(layers * dims.n_heads * q * k for layers, q, k in kinds.values()) * 2 * FLOAT32
    return int(MARGIN * (kept + max(kept, _page(dims, kinds)) + _overhead(dims, n)))


def lazy_bytes(dims: ModelDims, family: Family, n: Lengths, element_bytes: int = FLOAT32) -> int:
    """Peak bytes of a trace that keeps queries and keys (``element_bytes`` each: the model's
    dtype) and computes heads when asked (Hugging Face checkpoints); masks kept as bool
    ``[query, key]``."""
    kinds = _cells(dims, family, n)
    kept = sum(layers * (dims.n_heads * q + dims.n_kv_heads * k) * dims.d_head * element_bytes
               + q * k
               for layers, q, k in kinds.values())
    forward = max(dims.n_heads * q * k for _layers, q, k in kinds.values()) * FORWARD_BYTES_PER_CELL
    return int(MARGIN * (kept + max(forward, _page(dims, kinds)) + _overhead(dims, n)))
