"""How much memory a trace of n tokens needs: each adapter's ``memory_needed`` estimate, which a
server checks against its limits before a model runs (:mod:`app_pages.cache.limits`).

Two kinds of trace, two estimates:

- **dense** (the own models, and checkpoints read through transformers' eager weights): every
  head's weights and scores are kept, ``[layer, head, query, key]`` float32 twice, and held as
  much again as torch tensors while the hooks copy them; a page computes at most one layer of
  every head on top (:data:`PAGE_BYTES_PER_CELL` per cell).
- **lazy** (Hugging Face checkpoints recorded through the attention interface): each layer's
  queries and keys are kept, ``[head, token, d_head]`` in the model's dtype, and heads are
  computed when asked in row blocks. No page holds a layer any more: Explore, Head statistics,
  the Model view and Rollout read every head through :data:`PAGE_BLOCKS` blocks at a time
  (:mod:`model.reading.blocks`), the fused forward pass holds no ``[query, key]`` scores, and
  masks cost at most :data:`MASK_BYTES_PER_CELL` bytes per ``[query, key]`` cell (a padding or
  window mask kept as bool arrays, and the one a page asks for; a causal or full mask is kept
  as none, :class:`model.hf.capture._Band`).

Both add the forward pass's activations (a few ``[token, d_ff]`` arrays), the token strings and
the page's figures (:data:`PAGE_FIGURES`), and a margin of a quarter. The constants are upper
bounds of the peaks ``python -m bench.request_memory`` measures, 512 to 32,768 tokens (the
figures are in docs/operating.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.meta import Family, ModelDims
from model.store import rows_per_block

FLOAT32 = 4
# Bytes per [query, key] cell of one head held while a page computes a layer of a dense trace
# (float32 weights, logits and exponentials, float64 pooled copies).
PAGE_BYTES_PER_CELL = 20
# Bytes per [query, key] cell of a lazy trace's masks: bool arrays of where each query may
# attend and where it may not (a mask the model got as a tensor), and the one a page draws.
MASK_BYTES_PER_CELL = 3
# Blocks of every head a lazy trace's reader holds at once (the block, its softmax's
# temporaries, the row and key sums of the pooled views).
PAGE_BLOCKS = 6
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
    """One layer of every head, as a page of a dense trace computes it."""
    return max(dims.n_heads * q * k for _layers, q, k in kinds.values()) * PAGE_BYTES_PER_CELL


def _blocks(dims: ModelDims, kinds: dict) -> int:
    """What a lazy trace's readers hold at once: :data:`PAGE_BLOCKS` blocks of every head."""
    most = 0
    for _layers, q, k in kinds.values():
        rows = min(q, rows_per_block(dims.n_heads, k))
        most = max(most, dims.n_heads * rows * k * FLOAT32)
    return PAGE_BLOCKS * most


def _overhead(dims: ModelDims, n: Lengths) -> int:
    """Tokens, ids and the forward pass's activations (a few [token, d_ff] arrays)."""
    return OVERHEAD + (n.source + n.target) * (dims.d_ff + dims.d_model) * 4 * FLOAT32


def dense_bytes(dims: ModelDims, family: Family, n: Lengths,
                kinds: tuple[str, ...] | None = None) -> int:
    """Peak bytes of a trace that keeps every weight and score (the own models, eager
    checkpoints); ``kinds``: the attention kinds the model has where it lacks some of its
    family's (the recurrent translators: cross-attention only)."""
    kinds = {kind: cells for kind, cells in _cells(dims, family, n).items()
             if kinds is None or kind in kinds}
    kept = sum(layers * dims.n_heads * q * k for layers, q, k in kinds.values()) * 2 * FLOAT32
    masks = sum(q * k for _layers, q, k in kinds.values()) * MASK_BYTES_PER_CELL
    return int(MARGIN * (kept + max(kept, _page(dims, kinds)) + masks + _overhead(dims, n)))


def lazy_bytes(dims: ModelDims, family: Family, n: Lengths, element_bytes: int = FLOAT32) -> int:
    """Peak bytes of a trace that keeps queries and keys (``element_bytes`` each: the model's
    dtype) and computes heads when asked, in blocks (Hugging Face checkpoints)."""
    kinds = _cells(dims, family, n)
    kept = sum(layers * (dims.n_heads * q + dims.n_kv_heads * k) * dims.d_head * element_bytes
               for layers, q, k in kinds.values())
    masks = sum(q * k for _layers, q, k in kinds.values()) * MASK_BYTES_PER_CELL
    return int(MARGIN * (kept + masks + _blocks(dims, kinds) + _overhead(dims, n)))
