"""Capture attention of Hugging Face models through transformers' attention interface.

Every modern transformers model computes attention through a function looked up by name in
``ALL_ATTENTION_FUNCTIONS``. We register one more, :data:`ATTN_SDPA` (or :data:`ATTN_EAGER`
for models without SDPA support), that records what is needed to recompute each layer's
weights exactly (the queries and keys after RoPE, the scaling, the mask, T5's position bias,
soft-capping, attention sinks) and then delegates to the fast implementation, so the model
never runs in slow eager mode and never materialises every layer's [head, query, key] weights.

Recording is switched on per thread by :func:`recording` (a context variable), so a model
shared by many sessions never mixes their captures; a forward pass outside ``recording``
costs one dictionary look-up per layer.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, eager_mask, sdpa_mask

from i18n import _

ATTN_SDPA = "attention_explorer_sdpa"
ATTN_EAGER = "attention_explorer_eager"

_RECORDER: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "attention_explorer_hf_recorder", default=None)


@dataclass
class Call:
    """What one attention call saw (batch kept; one entry per layer and kind).

    ``q`` is ``[batch, head, query, d]``, ``k`` is ``[batch, kv_head, key, d]`` (float32 numpy);
    ``mask`` is the mask the implementation received (bool: True = may attend, or additive
    float) or None with ``causal`` telling what SDPA did; ``bias`` is an additive position bias.
    """

    module_name: str
    q: np.ndarray
    k: np.ndarray
    scaling: float
    mask: np.ndarray | None
    causal: bool
    bias: np.ndarray | None = None
    softcap: float | None = None
    sinks: np.ndarray | None = None


@dataclass
class Recorder:
    """Collects :class:`Call` records during the forward passes of one ``recording`` block."""

    module_names: dict[int, str]
    calls: list[Call] = field(default_factory=list)
    _shared: dict[int, tuple[Any, np.ndarray]] = field(default_factory=dict)

    def shared(self, tensor: torch.Tensor | None) -> np.ndarray | None:
        """A numpy copy of a tensor that many layers share (masks, biases), made once."""
        if tensor is None:
            return None
        key = id(tensor)
        if key not in self._shared:
            array = tensor.detach()
            array = array.float() if array.is_floating_point() else array
            array = array.cpu().numpy()
            array.setflags(write=False)
            self._shared[key] = (tensor, array)  # keep the tensor: ids stay unique
        return self._shared[key][1]


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A read-only float32 copy: traces are shared by every session of a server."""
    array = tensor.detach().float().cpu().numpy()
    array.setflags(write=False)
    return array


def _record(recorder: Recorder, module, query, key, attention_mask, scaling, kwargs) -> None:
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    is_causal = kwargs.get("is_causal")
    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(query.shape[2] > 1 and attention_mask is None and is_causal)
    sinks = kwargs.get("s_aux", getattr(module, "sinks", None))
    recorder.calls.append(Call(
        module_name=recorder.module_names.get(id(module), type(module).__name__),
        q=_to_numpy(query), k=_to_numpy(key), scaling=float(scaling),
        mask=recorder.shared(attention_mask), causal=causal,
        bias=recorder.shared(kwargs.get("position_bias")),
        softcap=kwargs.get("softcap"),
        sinks=None if sinks is None or not isinstance(sinks, torch.Tensor) else _to_numpy(sinks),
    ))


def _capturing_sdpa(module, query, key, value, attention_mask, *args, scaling=None, **kwargs):
    recorder = _RECORDER.get()
    if recorder is not None:
        _record(recorder, module, query, key, attention_mask, scaling, kwargs)
    return sdpa_attention_forward(module, query, key, value, attention_mask, *args,
                                  scaling=scaling, **kwargs)


def _capturing_eager(module, query, key, value, attention_mask, *args, scaling=None, **kwargs):
    recorder = _RECORDER.get()
    if recorder is not None:
        _record(recorder, module, query, key, attention_mask, scaling, kwargs)
    eager = sys.modules[type(module).__module__].eager_attention_forward
    return eager(module, query, key, value, attention_mask, *args, scaling=scaling, **kwargs)


AttentionInterface.register(ATTN_SDPA, _capturing_sdpa)
AttentionMaskInterface.register(ATTN_SDPA, sdpa_mask)
AttentionInterface.register(ATTN_EAGER, _capturing_eager)
AttentionMaskInterface.register(ATTN_EAGER, eager_mask)


@contextmanager
def recording(model: torch.nn.Module) -> Iterator[Recorder]:
    """Record every attention call of ``model`` made by this thread inside the block."""
    recorder = Recorder({id(m): name for name, m in model.named_modules()})
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _RECORDER.reset(token)


class LazyAttention:
    """One kind of a trace (an :class:`~model.store.AttentionStore`): ``[layer, head, query,
    key]`` computed a head at a time from the recorded queries and keys.

    Args:
        calls: the :class:`Call` of each layer, in layer order.
        batch: which sequence of the batch.
        q_index, k_index: positions of the real (non-padding) queries and keys.
    """

    def __init__(self, calls: list[Call], batch: int, q_index: np.ndarray, k_index: np.ndarray):
        self.calls = calls
        self.batch = batch
        self.q_index = np.asarray(q_index)
        self.k_index = np.asarray(k_index)
        n_heads = {c.q.shape[1] for c in calls}
        if len(n_heads) != 1:
            raise ValueError(_("layers disagree on the number of heads: {counts}").format(
                counts=sorted(n_heads)))
        self.n_heads = n_heads.pop()
        self.n_kv_heads = calls[0].k.shape[1]
        self.shape = (len(calls), self.n_heads, len(self.q_index), len(self.k_index))

    def mask(self, layer: int) -> np.ndarray:
        """Where layer ``layer`` may attend: bool ``[query, key]``, from the mask it received."""
        call = self.calls[layer]
        n_q, n_k = call.q.shape[2], call.k.shape[2]
        if call.mask is None:
            full = np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q) if call.causal \
                else np.ones((n_q, n_k), bool)
        else:
            mask = call.mask[min(self.batch, call.mask.shape[0] - 1), 0]  # [query, key]
            full = mask if mask.dtype == bool else mask > np.finfo(np.float32).min / 2
        return full[np.ix_(self.q_index, self.k_index)]

    def scores(self, layer: int, head: int) -> np.ndarray:
        """Scores before the mask, position bias and soft-capping included: ``[query, key]``."""
        call = self.calls[layer]
        b = self.batch
        group = self.n_heads // call.k.shape[1]
        q = call.q[b, head][self.q_index]  # [query, d]
        k = call.k[b, head // group][self.k_index]  # [key, d]
        scores = (q @ k.T) * np.float32(call.scaling)  # [query, key]
        if call.bias is not None:
            bias = call.bias[min(b, call.bias.shape[0] - 1), min(head, call.bias.shape[1] - 1)]
            scores = scores + bias[np.ix_(self.q_index, self.k_index)]
        if call.softcap:
            scores = np.tanh(scores / call.softcap) * call.softcap
        return scores.astype(np.float32)

    def _logits(self, layer: int, head: int) -> np.ndarray:
        """What goes into softmax: -inf where masked, additive masks added: ``[query, key]``."""
        call = self.calls[layer]
        b = self.batch
        scores = self.scores(layer, head)
        if call.mask is not None and call.mask.dtype != bool:
            mask = call.mask[min(b, call.mask.shape[0] - 1), min(head, call.mask.shape[1] - 1)]
            scores = scores + mask[np.ix_(self.q_index, self.k_index)]
        return np.where(self.mask(layer), scores, -np.inf).astype(np.float32)

    def __getitem__(self, index: tuple[int, int]) -> np.ndarray:
        layer, head = index
        scores = self._logits(layer, head)
        call = self.calls[layer]
        top = scores.max(axis=-1, keepdims=True)
        if call.sinks is not None:
            sink = np.float32(call.sinks[head])
            top = np.maximum(top, sink)
        top = np.where(np.isfinite(top), top, 0)
        weights = np.exp(scores - top)
        total = weights.sum(axis=-1, keepdims=True)
        if call.sinks is not None:
            total = total + np.exp(np.float32(call.sinks[head]) - top)
        return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)

    def layer(self, layer: int) -> np.ndarray:
        """Every head of one layer: ``[head, query, key]``."""
        return np.stack([self[layer, head] for head in range(self.n_heads)])

    def stack(self) -> np.ndarray:
        """Every layer and head: ``[layer, head, query, key]``."""
        return np.stack([self.layer(layer) for layer in range(self.shape[0])])
