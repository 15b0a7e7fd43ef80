"""Numbers of the lesson §3.4, every mask: the masks attention uses, each applied to one real
head's scores, and a real padded batch of two sentences through the own model.

The seed names the masks twice: the decoder's causal mask (§3.4 step 2a, the writer's
blindfold) and the line of the attention function that applies any mask (§4.9,
``scores.masked_fill(mask == 0, float("-inf"))``: "causal mask / padding"). Here:

- :func:`build_mask` makes the four masks of a sequence: **bidirectional** (an encoder, BERT:
  nothing hidden but padding), **causal** (a decoder, GPT: the lower triangle), **sliding
  window** (local attention as in Mistral: the ``width`` latest tokens, itself included) and
  **prefix-LM** (T5's and UniLM's prefix: the first ``prefix`` tokens see each other both ways,
  the rest causal); :func:`masked_softmax` applies one to scores as the seed's ``attention()``
  does; :func:`every_mask` applies all four to :func:`head_scores`, one head's QKᵀ/√d_k read
  from a trace;
- :func:`model_mask` names the mask a model uses for an attention kind from its family, and
  :func:`matching_masks` finds which of the four equals the mask the trace holds;
- :func:`padded_batch` runs two sentences of different lengths *together* through the own
  network (one ``[2, L]`` batch on the model's device, the shorter padded with ``pad_id``, the
  network's own key-padding mask) and compares every weight of each sentence with its own
  single-sentence trace: the padded keys get weight exactly 0 and the real rows are unchanged,
  which is why padding masks exist.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from i18n import _
from model.analysis.cuts import mask_panels, window
from model.lessons.network import attention_module, check_head, own_network, to_numpy
from model.meta import Family
from model.own.hooks import INPUT, hook_name, record
from model.own.transformer import ATTENTION_MODULES
from model.own.vocab import PAD
from model.trace import AttentionTrace

# The four masks of one sequence, in the order the lesson shows them.
MASKS = ("bidirectional", "causal", "sliding", "prefix")
MAX_SIDE = 16  # tokens a side the lesson draws (longer inputs: the first ones)


def build_mask(mask: str, n: int, *, width: int = 3, prefix: int = 2,
               keep=None) -> np.ndarray:
    """One of :data:`MASKS` for a sequence of ``n`` tokens.

    Args:
        mask: ``"bidirectional"``, ``"causal"``, ``"sliding"`` or ``"prefix"``.
        n: tokens (queries and keys are the same sequence: self-attention).
        width: the sliding window's width, 1 to ``n``: query i sees keys i − width + 1 .. i.
        prefix: the prefix-LM's prefix, 0 to ``n`` tokens: they see each other both ways; every
            later token sees the prefix and the tokens before it (0: causal; ``n``:
            bidirectional).
        keep: optional bool ``[n]``, False for padding keys, which no query sees.

    Returns:
        bool ``[query, key]``, True where the query may attend.

    Raises:
        ValueError: an unknown mask, or a width or prefix out of range.
    """
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, not {mask!r}")
    if n < 1:
        raise ValueError(f"a mask needs at least one token, not {n}")
    query = np.arange(n)[:, None]  # [query, 1]
    key = np.arange(n)[None, :]  # [1, key]
    if mask == "bidirectional":
        allowed = np.ones((n, n), dtype=bool)
    elif mask == "causal":
        allowed = key <= query
    elif mask == "sliding":
        if not 1 <= int(width) <= n:
            raise ValueError(_("the window's width must be 1 to {n}, not {width}").format(
                n=n, width=width))
        allowed = (key <= query) & (query - key < int(width))
    else:
        if not 0 <= int(prefix) <= n:
            raise ValueError(_("the prefix must be 0 to {n} tokens, not {prefix}").format(
                n=n, prefix=prefix))
        allowed = (key <= query) | (key < int(prefix))
    allowed = np.broadcast_to(allowed, (n, n)).copy()  # [query, key]
    if keep is not None:
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (n,):
            raise ValueError(f"keep has shape {keep.shape}, not ({n},)")
        allowed &= keep[None, :]
    return allowed


def masked_softmax(scores, allowed) -> np.ndarray:
    """The seed's ② and ③: forbidden scores set to −∞ (``masked_fill(mask == 0, -inf)``), then
    the softmax of each row, in float64 with torch.

    Args:
        scores: ``[query, key]`` (or any leading dimensions) scores QKᵀ/√d_k.
        allowed: bool, the shape of ``scores`` or broadcastable to it; True = may attend.

    Returns:
        float64 weights the shape of ``scores``: each row sums to 1, forbidden cells exactly 0.

    Raises:
        ValueError: a row with no key allowed (its softmax would be NaN).
    """
    s = torch.as_tensor(np.asarray(scores, dtype=np.float64))
    mask = torch.broadcast_to(torch.as_tensor(np.asarray(allowed, dtype=bool)), s.shape)
    if (~mask).all(dim=-1).any():
        raise ValueError(_("a query row with every key masked has no softmax"))
    return torch.softmax(s.masked_fill(mask == 0, float("-inf")), dim=-1).numpy()


@dataclass(frozen=True)
class HeadScores:
    """One head's scores and the model's own mask and weights, for the first tokens of a trace.

    Attributes:
        name, layer, head: which head (a self-attention kind).
        query_labels, key_labels: the axes' names (decoder rows named by the word they write).
        query_hover, key_hover: what hovering a row or a column says of it.
        special: positions of special tokens on the query and key axes.
        scores: float64 ``[query, key]`` the head's QKᵀ/√d_k before any mask.
        own_mask: bool ``[query, key]`` the mask the model applied.
        own_weights: float64 ``[query, key]`` the model's own weights (its trace).
        total: tokens in the whole input (more than shown when the input was cut).
        complete: whether the rows shown are whole rows of the model's: no key beyond the cut
            was allowed to them (then the model's own weights are reproduced by its mask).
    """

    name: str
    layer: int
    head: int
    query_labels: list[str]
    key_labels: list[str]
    query_hover: list[str]
    key_hover: list[str]
    special: tuple[list[int], list[int]]
    scores: np.ndarray
    own_mask: np.ndarray
    own_weights: np.ndarray
    total: int
    complete: bool

    @property
    def n(self) -> int:
        """Tokens shown (queries = keys)."""
        return self.scores.shape[0]

    @property
    def cut(self) -> bool:
        """Whether only the first tokens of the input are shown."""
        return self.n < self.total


def head_scores(trace: AttentionTrace, name: str, layer: int, head: int,
                limit: int = MAX_SIDE) -> HeadScores:
    """The scores of one self-attention head for the first ``limit`` tokens, with the mask and
    weights the model itself used there.

    Args:
        trace: any trace that holds scores (the own models', a loaded checkpoint's).
        name: ``"encoder.self"`` or ``"decoder.self"``.
        layer, head: which head.
        limit: the most tokens a side.

    Returns:
        a :class:`HeadScores`.

    Raises:
        ValueError: a kind that is not self-attention, or a trace without scores.
    """
    if not name.endswith(".self"):
        raise ValueError(_("the masks of this lesson are masks of self-attention"))
    total = len(trace.axes(name)[0])
    view = window(trace, name, 0, min(total, int(limit)))
    panels = mask_panels(trace, name, layer, head, view)
    return HeadScores(
        name=name, layer=int(layer), head=int(head),
        query_labels=[str(t) for t in view.query_tokens],
        key_labels=[str(t) for t in view.key_tokens], query_hover=list(view.query_labels),
        key_hover=list(view.key_labels), special=(view.query_special, view.key_special),
        scores=panels.scores.astype(np.float64), own_mask=np.asarray(panels.allowed, bool),
        own_weights=panels.weights.astype(np.float64), total=total,
        complete=not trace.mask(name, layer)[view.queries, view.keys.stop:].any())


@dataclass(frozen=True)
class MaskResult:
    """One mask applied to one head's scores: the mask (bool ``[query, key]``) and the
    weights (float64 ``[query, key]``)."""

    allowed: np.ndarray
    weights: np.ndarray

    @property
    def seen(self) -> int:
        """Query–key pairs allowed."""
        return int(self.allowed.sum())


def every_mask(scores, *, width: int, prefix: int) -> dict[str, MaskResult]:
    """Each of :data:`MASKS` applied to the same scores.

    Args:
        scores: ``[n, n]`` one head's QKᵀ/√d_k.
        width, prefix: the sliding window's width and the prefix-LM's prefix
            (:func:`build_mask`).

    Returns:
        ``mask name -> `` :class:`MaskResult`, in the order of :data:`MASKS`.
    """
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    if scores.shape != (n, n):
        raise ValueError(f"self-attention scores are square, not {scores.shape}")
    results = {}
    for mask in MASKS:
        allowed = build_mask(mask, n, width=width, prefix=prefix)
        results[mask] = MaskResult(allowed, masked_softmax(scores, allowed))
    return results


def model_mask(family: Family | str, name: str) -> str:
    """The mask a model of ``family`` applies to attention kind ``name`` (padding aside):
    ``"bidirectional"`` for an encoder's self-attention and for cross-attention (every source
    word), ``"causal"`` for a decoder's self-attention."""
    Family.parse(str(family))
    if name not in ATTENTION_MODULES:
        raise ValueError(f"{name!r} is not an attention kind")
    return "causal" if name == "decoder.self" else "bidirectional"


def matching_masks(own_mask, results: dict[str, MaskResult]) -> list[str]:
    """The masks of ``results`` equal to ``own_mask`` (the mask the trace holds), in order."""
    own_mask = np.asarray(own_mask, dtype=bool)
    return [mask for mask, result in results.items()
            if result.allowed.shape == own_mask.shape and (result.allowed == own_mask).all()]


def largest_difference(a, b) -> float:
    """``max |a − b|`` (0 for empty arrays)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max()) if a.size else 0.0


# --- padding: two sentences in one batch ---------------------------------------------------

def _stack(trace: AttentionTrace, name: str, side: str) -> str:
    """The stack whose tokens are ``side`` (query or key) of kind ``name``."""
    stack, kind = name.split(".")
    return "encoder" if kind == "cross" and side == "key" else stack


def _ids(trace: AttentionTrace, stack: str) -> list[int]:
    """The ids the trace's ``stack`` read (the whole input of a single-stack model)."""
    if trace.family is Family.ENCODER_DECODER:
        return [int(i) for i in (trace.source_ids if stack == "encoder" else trace.target_ids)]
    return [int(i) for i in trace.ids]


@dataclass(frozen=True)
class PaddedBatch:
    """Two sentences run together as one padded batch, one head shown.

    Attributes:
        name, layer, head: the head shown.
        device: where the batch ran.
        shapes: each stack's batch of ids, ``stack -> (2, L)``.
        lengths: each sentence's real ``(queries, keys)`` of kind ``name``.
        query_tokens, key_tokens: each sentence's axes in the batch, padded with ``<pad>``.
        scores: float64 ``[sentence, query, key]`` the head's scores in the batch.
        allowed: bool ``[sentence, query, key]`` the mask the network applied (its own key
            padding, and the causal triangle of decoder self-attention).
        weights: float64 ``[sentence, query, key]`` the head's weights in the batch.
        padded_weight: the largest weight any query of either sentence gave a padding key, in
            every layer, head and kind: exactly 0.
        difference: per sentence, the largest ``|weight in the batch − weight in its own
            trace|`` over its real rows and keys, in every layer, head and kind.
        compared: how many weights ``difference`` compared, per sentence.
    """

    name: str
    layer: int
    head: int
    device: str
    shapes: dict[str, tuple[int, int]]
    lengths: list[tuple[int, int]]
    query_tokens: list[list[str]]
    key_tokens: list[list[str]]
    scores: np.ndarray
    allowed: np.ndarray
    weights: np.ndarray
    padded_weight: float
    difference: list[float]
    compared: list[int]

    @property
    def padded(self) -> int:
        """The sentence with padding keys in kind ``name`` (the one with fewer keys; the first
        when both are as long)."""
        return int(self.lengths[1][1] < self.lengths[0][1])


def _weights_of(pattern: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    """A module's weights as the traces read them: the model's own in float32, else the
    float32 softmax of its scores under its mask (:meth:`model.own.adapter.OwnModel._make_trace`).
    Returns float64 ``[batch, head, query, key]``."""
    if pattern.dtype == torch.float32:
        return to_numpy(pattern)
    full = torch.broadcast_to(mask.bool(), scores.shape)  # [batch, head, query, key]
    s = scores.float().masked_fill(~full, float("-inf"))
    return to_numpy(torch.softmax(s, dim=-1))


def padded_batch(loaded, traces: tuple[AttentionTrace, AttentionTrace], name: str,
                 layer: int, head: int) -> PaddedBatch:
    """Run two traced sentences again, together: each stack's ids padded with the network's
    ``pad_id`` to the longer one's length, one forward pass of the ``[2, L]`` batch on the
    model's device, every attention module's scores, weights and received mask recorded.

    Args:
        loaded: an own model; ``traces``: two traces of it (each sentence alone).
        name: the attention kind shown; ``layer``, ``head``: the head shown.

    Returns:
        a :class:`PaddedBatch`.

    Raises:
        ValueError: not an own model, or a layer or head out of range.
    """
    network = own_network(loaded)
    head = check_head(network, head)
    attention_module(network, name, layer)  # checks the kind and the layer
    pad = network.cfg.pad_id
    device = next(network.parameters()).device
    stacks = loaded.family.stacks
    ids = {stack: [_ids(trace, stack) for trace in traces] for stack in stacks}
    batch = {}
    for stack, rows in ids.items():
        width = max(len(row) for row in rows)
        padded = torch.full((len(rows), width), pad, dtype=torch.long, device=device)
        for b, row in enumerate(rows):  # [batch, position]: the shorter row ends in pad_id
            padded[b, :len(row)] = torch.tensor(row, dtype=torch.long, device=device)
        batch[stack] = padded
    modules = {kind: [attention_module(network, kind, i) for i in range(traces[0].layers(kind))]
               for kind in loaded.family.kinds}
    points = [point for kind_modules in modules.values() for module in kind_modules
              for point in (module.hook_scores, module.hook_pattern)]
    inputs = [module for kind_modules in modules.values() for module in kind_modules]
    arguments = {"src_ids": batch.get("encoder"), "tgt_ids": batch.get("decoder")}
    if loaded.family is Family.ENCODER_ONLY:
        arguments["tgt_ids"] = None
    elif loaded.family is Family.DECODER_ONLY:
        arguments = {"tgt_ids": batch["decoder"]}
    with torch.inference_mode(), record(points, inputs) as store:
        network(**arguments)
    padded_weight, difference, compared = 0.0, [0.0, 0.0], [0, 0]
    shown = {}
    for kind, kind_modules in modules.items():
        q_stack, k_stack = _stack(traces[0], kind, "query"), _stack(traces[0], kind, "key")
        for i, module in enumerate(kind_modules):
            scores = store[hook_name(module.hook_scores)]  # [batch, head, query, key]
            mask = store[hook_name(module) + INPUT]["mask"]  # broadcastable to the scores
            weights = _weights_of(store[hook_name(module.hook_pattern)], scores, mask)
            keys_padded = (batch[k_stack] == pad).cpu().numpy()  # [batch, key]
            padded_weight = max(padded_weight, float(np.where(
                keys_padded[:, None, None, :], weights, 0.0).max()))
            for b, trace in enumerate(traces):
                n_q, n_k = len(ids[q_stack][b]), len(ids[k_stack][b])
                alone = trace.layer_weights(kind, i)  # [head, query, key]
                difference[b] = max(difference[b], largest_difference(
                    weights[b, :, :n_q, :n_k], alone))
                compared[b] += int(alone.size)
            if kind == name and i == int(layer):
                allowed = torch.broadcast_to(mask.bool(), scores.shape)[:, head]
                shown = {"scores": to_numpy(scores[:, head]), "weights": weights[:, head],
                         "allowed": allowed.cpu().numpy().copy()}
    q_stack, k_stack = _stack(traces[0], name, "query"), _stack(traces[0], name, "key")

    def axis(trace: AttentionTrace, side: int, stack: str) -> list[str]:
        tokens = [str(t) for t in trace.axes(name)[side]]
        return tokens + [PAD] * (batch[stack].shape[1] - len(tokens))

    return PaddedBatch(
        name=name, layer=int(layer), head=head, device=str(device),
        shapes={stack: tuple(int(n) for n in ids_.shape) for stack, ids_ in batch.items()},
        lengths=[(len(ids[q_stack][b]), len(ids[k_stack][b])) for b in range(len(traces))],
        query_tokens=[axis(trace, 0, q_stack) for trace in traces],
        key_tokens=[axis(trace, 1, k_stack) for trace in traces],
        scores=shown["scores"], allowed=shown["allowed"], weights=shown["weights"],
        padded_weight=padded_weight, difference=difference, compared=compared)
