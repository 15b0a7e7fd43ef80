"""Capture attention of Hugging Face models through transformers' attention interface.

Every modern transformers model computes attention through a function looked up by name in
``ALL_ATTENTION_FUNCTIONS``. We register one more, :data:`ATTN_SDPA` (or :data:`ATTN_EAGER`
for models without SDPA support), that records what is needed to recompute each layer's
weights exactly (the queries and keys after RoPE, the scaling, the mask, T5's position bias,
soft-capping, attention sinks) and then delegates to the fast implementation, so the model
never runs in slow eager mode and never materialises every layer's [head, query, key] weights.
The weights are recomputed from a recorded call by one formula, :func:`recompute`, for a trace's
lazy store (:class:`LazyAttention`, a sequence in row blocks) and for a padded batch
(:func:`padded_weights`, every sequence at once).

Recording is switched on per thread by :func:`recording` (a context variable), so a model
shared by many sessions never mixes their captures; a forward pass outside ``recording``
costs one dictionary look-up per layer.
"""

from __future__ import annotations

import contextvars
import sys
import warnings
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
from model.reading.blocks import (
    BLOCK_BYTES,
    Block,
    assemble,
    row_slices,
    rows_per_block,
    softmax_rows,
)
from model.store import readonly

ATTN_SDPA = "attention_explorer_sdpa"
ATTN_EAGER = "attention_explorer_eager"

_RECORDER: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "attention_explorer_hf_recorder", default=None)
# what a pass of this thread reads or changes beyond the weights (values, each head's output):
# :class:`model.hf.moves.Probe`, set by :func:`probing`; None outside (one look-up per layer)
_PROBE: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "attention_explorer_hf_probe", default=None)


@dataclass
class Call:
    """What one attention call saw (batch kept; one entry per layer and kind).

    ``q`` is ``[batch, head, query, d]``, ``k`` is ``[batch, kv_head, key, d]``, numpy in the
    model's precision ``dtype`` (float32 or float16; bfloat16, which numpy lacks, as its raw bits
    in uint16: :func:`recorded_tensor` turns either back into torch); ``device`` is where the
    call ran (where its heads are computed); ``mask`` is the mask the implementation received
    (bool: True = may attend, or additive float32) or None with ``causal`` telling what SDPA
    did; ``bias`` is an additive position bias (float32).
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
    dtype: str = "float32"
    device: torch.device | None = None


@dataclass
class Recorder:
    """Collects :class:`Call` records during the forward passes of one ``recording`` block."""

    module_names: dict[int, str]
    calls: list[Call] = field(default_factory=list)
    _shared: dict[int, tuple[Any, np.ndarray]] = field(default_factory=dict)

    def shared(self, tensor: torch.Tensor | None, mask: bool = False) -> np.ndarray | None:
        """A float32 (or bool) numpy copy of a tensor that many layers share (masks, biases),
        made once. An additive ``mask`` in half precision forbids with its precision's minimum
        (float16's is -65504): that becomes float32's, which :func:`allowed_keys` reads."""
        if tensor is None:
            return None
        key = id(tensor)
        if key not in self._shared:
            array = tensor.detach()
            if array.is_floating_point():
                floor = torch.finfo(array.dtype).min / 2
                low = array <= floor if mask and array.dtype != torch.float32 else None
                array = array.float()
                if low is not None:
                    array = array.masked_fill(low, torch.finfo(torch.float32).min)
            array = array.cpu().numpy()
            array.setflags(write=False)
            self._shared[key] = (tensor, array)  # keep the tensor: ids stay unique
        return self._shared[key][1]


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A read-only copy in the tensor's precision (float32 and float16 as they are, bfloat16 as
    its raw bits in uint16, any other as float32): traces are shared by every session of a
    server."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.uint16)
    elif tensor.dtype not in (torch.float32, torch.float16):
        tensor = tensor.float()
    array = tensor.cpu().numpy()
    array.setflags(write=False)
    return array


def _stored_dtype(tensor: torch.Tensor) -> str:
    """The precision :func:`_to_numpy` keeps ``tensor`` in."""
    return str(tensor.dtype).removeprefix("torch.") if tensor.dtype in (
        torch.bfloat16, torch.float16) else "float32"


def recorded_tensor(array: np.ndarray, dtype: str = "float32") -> torch.Tensor:
    """A recorded array (read-only numpy, never written) as a torch tensor of ``dtype``, on the
    CPU, sharing its memory: bfloat16's raw bits viewed as bfloat16 again."""
    with warnings.catch_warnings():  # torch warns of read-only arrays; nothing writes
        warnings.simplefilter("ignore", UserWarning)
        tensor = torch.from_numpy(array)
    return tensor.view(torch.bfloat16) if dtype == "bfloat16" else tensor


def _float32_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A read-only float32 copy (attention sinks: a few numbers per head)."""
    array = tensor.detach().float().cpu().numpy()
    array.setflags(write=False)
    return array


def allowed_keys(call: Call) -> np.ndarray:
    """Where each query of ``call`` may attend, from the mask it received: bool ``[batch or 1,
    query, key]`` (an additive mask allows what is above half the float32 minimum; no mask:
    every key, or a causal triangle ending at the last key when SDPA was causal)."""
    n_q, n_k = call.q.shape[2], call.k.shape[2]
    if call.mask is None:
        full = np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q) if call.causal \
            else np.ones((n_q, n_k), bool)
        return full[None]
    mask = call.mask[:, 0]  # [batch or 1, query or 1, key] (BERT-style masks: one row)
    allowed = mask if mask.dtype == bool else mask > np.finfo(np.float32).min / 2
    return np.broadcast_to(allowed, (allowed.shape[0], n_q, n_k))


def recompute(product: torch.Tensor, call: Call, *, scaled: bool, bias=None, additive=None,
              forbidden=None, masked_from: int = 0, sinks=None, dead: bool = False,
              scores: bool = False) -> torch.Tensor:
    """The one formula of a recorded call's weights, from the product of its queries and keys
    (:class:`LazyAttention` per sequence in row blocks, :func:`padded_weights` per batch)::

        scores  = softcap · tanh((scaling · q · kᵀ + bias) / softcap)   (tanh if soft-capped)
        weights = softmax(scores + additive mask, −∞ where the mask forbids), sinks included

    as transformers' eager attention computes them.

    Args:
        product: ``q · kᵀ`` ``[..., head, rows, keys]`` (``(scaling · q) · kᵀ`` when
            ``scaled``), float32; it is overwritten.
        bias: the position bias (T5), broadcast to ``product`` (on its device, as every piece).
        additive: an additive float mask, broadcast to ``product``.
        forbidden: bool, True where the mask forbids attention, for keys ``masked_from:``
            (keys before them are all allowed), broadcast to ``product[..., masked_from:]``.
        sinks: per head a logit that shares the normalisation and receives no key (gpt-oss):
            ``[head]``, the heads of ``product``.
        dead: some row may have no allowed key; it becomes all 0 (not NaN).
        scores: stop at the scores (before the mask and softmax).
    """
    s = product if scaled else product.mul_(float(call.scaling))
    if bias is not None:
        s += bias
    if call.softcap:
        s = torch.tanh(s / call.softcap).mul_(call.softcap)
    if scores:
        return s
    if additive is not None:
        s += additive
    if forbidden is not None:
        s[..., masked_from:].masked_fill_(forbidden, -torch.inf)
    return softmax_rows(s, sinks, dead=dead)


def _record(recorder: Recorder, module, query, key, attention_mask, scaling, kwargs) -> None:
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    is_causal = kwargs.get("is_causal")
    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(query.shape[2] > 1 and attention_mask is None and is_causal)
    sinks = kwargs.get("s_aux", getattr(module, "sinks", None))
    name = recorder.module_names.get(id(module), type(module).__name__)
    q, k = _to_numpy(query), _to_numpy(key)
    mask = recorder.shared(attention_mask, mask=True)
    bias = recorder.shared(kwargs.get("position_bias"))
    last = recorder.calls[-1] if recorder.calls else None
    if last is not None and last.module_name == name and last.mask is mask and \
            last.bias is bias and last.softcap == kwargs.get("softcap") and \
            float(scaling) == last.scaling and last.causal == causal and \
            (last.sinks is None) == (sinks is None) and last.q.dtype == q.dtype and \
            np.array_equal(last.q, q) and np.array_equal(last.k, k):
        return  # the same weights again, for other values (DiffLlama's two halves of V)
    recorder.calls.append(Call(
        module_name=name, q=q, k=k, scaling=float(scaling),
        mask=mask, causal=causal, bias=bias,
        softcap=kwargs.get("softcap"),
        sinks=None if sinks is None or not isinstance(sinks, torch.Tensor) else
        _float32_numpy(sinks),
        dtype=_stored_dtype(query), device=query.device,
    ))


def _probed(implementation, module, query, key, value, attention_mask, args, scaling, kwargs):
    """Call ``implementation``, letting this thread's probe (if any) read or change the values
    it receives and each head's output it gives (``[batch, query, head, d_head]``)."""
    probe = _PROBE.get()
    if probe is not None:
        value = probe.value(module, query, value)
    result = implementation(module, query, key, value, attention_mask, *args, scaling=scaling,
                            **kwargs)
    if probe is not None:
        result = (probe.output(module, query, result[0]), *result[1:])
    return result


def _capturing_sdpa(module, query, key, value, attention_mask, *args, scaling=None, **kwargs):
    recorder = _RECORDER.get()
    if recorder is not None:
        _record(recorder, module, query, key, attention_mask, scaling, kwargs)
    return _probed(sdpa_attention_forward, module, query, key, value, attention_mask, args,
                   scaling, kwargs)


def _capturing_eager(module, query, key, value, attention_mask, *args, scaling=None, **kwargs):
    recorder = _RECORDER.get()
    if recorder is not None:
        _record(recorder, module, query, key, attention_mask, scaling, kwargs)
    eager = sys.modules[type(module).__module__].eager_attention_forward
    return _probed(eager, module, query, key, value, attention_mask, args, scaling, kwargs)


def current_probe():
    """The probe open in this thread, or None."""
    return _PROBE.get()


@contextmanager
def probing(probe) -> Iterator[Any]:
    """Inside the block, this thread's passes show ``probe`` every attention call's values and
    output (:class:`model.hf.moves.Probe`)."""
    token = _PROBE.set(probe)
    try:
        yield probe
    finally:
        _PROBE.reset(token)


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
    key]`` computed when asked from the recorded queries and keys (by :func:`recompute`), with
    torch on ``device`` (where the model ran), in row blocks (:mod:`model.reading.blocks`) so
    that memory stays bounded. Queries and keys recorded in half precision are cast to float32
    on that device before their product: weights are computed with float32 accumulation.

    Args:
        calls: the :class:`Call` of each layer, in layer order.
        batch: which sequence of the batch.
        q_index, k_index: positions of the real (non-padding) queries and keys.
        device: where heads are computed; None (the default): each layer's on the device its
            call ran on (:attr:`Call.device`; the CPU for a call that names none), as for a
            model spread over several GPUs.
        n_tokens: how many of a call's keys are the (padded) tokens; keys after them are not
            tokens (DeepSeek-V4's compressed keys): they share each row's softmax as the
            model computes it and are then left out, so that a row sums to less than 1 by their
            share, never renormalised. None: every key is a token.
    """

    def __init__(self, calls: list[Call], batch: int, q_index: np.ndarray, k_index: np.ndarray,
                 device: torch.device | str | None = None, n_tokens: int | None = None):
        self.calls = calls
        self.batch = batch
        self.q_index = np.asarray(q_index)
        self.k_index = np.asarray(k_index)
        self.n_tokens = n_tokens
        self.device = torch.device(device or "cpu")  # every layer's, unless per call
        self._per_call = device is None
        n_heads = {c.q.shape[1] for c in calls}
        if len(n_heads) != 1:
            raise ValueError(_("layers disagree on the number of heads: {counts}").format(
                counts=sorted(n_heads)))
        self.n_heads = n_heads.pop()
        self.n_kv_heads = calls[0].k.shape[1]
        self.shape = (len(calls), self.n_heads, len(self.q_index), len(self.k_index))
        self._masks: dict = {}  # masks shared by layers: key -> _Mask, made here, once
        for layer in range(len(calls)):  # now, so that a cache sizing the trace counts them
            self._mask(layer)

    def mask(self, layer: int) -> np.ndarray:
        """Where layer ``layer`` may attend: bool ``[query, key]``, from the mask it received."""
        return self._mask(layer).allowed[:, :self.shape[3]]

    def keys(self, layer: int) -> np.ndarray:
        """The positions of the keys layer ``layer``'s rows are computed over: the real tokens',
        then any keys that are not tokens (:attr:`n_tokens`)."""
        n_keys = self.calls[layer].k.shape[2]
        if self.n_tokens is None or n_keys <= self.n_tokens:
            return self.k_index
        return np.concatenate([self.k_index, np.arange(self.n_tokens, n_keys)])

    def _mask(self, layer: int) -> _Mask | _Band:
        call = self.calls[layer]
        key = ("causal" if call.causal else "full") if call.mask is None else id(call.mask)
        found = self._masks.get(key)
        if found is None:
            keys = self.keys(layer)
            n_q, n_k = call.q.shape[2], call.k.shape[2]
            if call.mask is None and _is_range(self.q_index, n_q) and _is_range(keys, n_k):
                # no mask tensor, every token kept: a triangle (causal) or everything, known
                # row by row without an n² array (1 GB at 32k tokens)
                found = _Band(n_q, n_k, n_k - n_q if call.causal else None)
            else:
                found = _Mask(self._allowed(call, keys))
            self._masks[key] = found
        return found

    def _allowed(self, call: Call, keys: np.ndarray) -> np.ndarray:
        full = allowed_keys(call)  # [batch or 1, query, key]
        full = full[min(self.batch, full.shape[0] - 1)]
        return readonly(full[np.ix_(self.q_index, keys)])

    def device_of(self, layer: int) -> torch.device:
        """Where layer ``layer``'s heads are computed."""
        if not self._per_call:
            return self.device
        return self.calls[layer].device or torch.device("cpu")

    def _tensor(self, array: np.ndarray, index: np.ndarray | None = None,
                device: torch.device | None = None, dtype: str = "float32") -> torch.Tensor:
        """Recorded ``array`` (read-only numpy of ``dtype``, never written) as float32 on
        ``device`` (default :attr:`device`), rows ``index`` of its second-to-last axis kept;
        the cast to float32 is made there."""
        tensor = recorded_tensor(array, dtype)
        if index is not None and not _is_range(index, array.shape[-2]):
            tensor = tensor[..., torch.from_numpy(index), :]
        return tensor.to(device or self.device).float()

    def _addition(self, array: np.ndarray | None, heads: list[int], k_index: np.ndarray,
                  device: torch.device | None = None):
        """A recorded ``[batch, head, query, key]`` addition (bias, additive mask) of this
        sequence: a function of ``(start, stop, ke)`` giving its block ``[head or 1, rows,
        keys]`` on the device, cut to the real queries and keys (an addition shared by every
        head stays one head, broadcast), or None."""
        if array is None:
            return None
        seq = array[min(self.batch, array.shape[0] - 1)]  # [head or 1, query, key]
        index = [0] if seq.shape[0] == 1 else [min(h, seq.shape[0] - 1) for h in heads]

        rows = self.q_index if seq.shape[1] > 1 else np.zeros(len(self.q_index), int)
        keys = k_index if seq.shape[2] > 1 else np.zeros(len(k_index), int)

        device = device or self.device

        def block(start: int, stop: int, ke: int) -> torch.Tensor:
            cut = seq[index][:, rows[start:stop]][:, :, keys[:ke]]
            return torch.from_numpy(np.ascontiguousarray(cut, dtype=np.float32)).to(device)

        return block

    def blocks(self, layer: int, heads=None, rows: range | None = None,
               budget: int = BLOCK_BYTES, align: tuple[int, int] = (1, 1),
               scores: bool = False) -> Iterator[Block]:
        """The weights of ``heads`` (default all) in blocks of query ``rows`` (default all).

        Args:
            align: ``(rows, keys)``: a multiple of this many rows per block (the last one
                excepted), and of keys (or every key).
            scores: yield the scores before the mask and softmax instead (position bias and
                soft-capping included), every key of each row.
        """
        call = self.calls[layer]
        heads = list(range(self.n_heads)) if heads is None else [int(h) for h in heads]
        rows = range(self.shape[2]) if rows is None else rows
        group = self.n_heads // call.k.shape[1]
        b = self.batch
        keys = self.keys(layer)  # the tokens' keys, then any that are not tokens
        device = self.device_of(layer)
        q = self._tensor(call.q[b], self.q_index, device, call.dtype)  # [head, query, d] float32
        k = self._tensor(call.k[b], keys, device, call.dtype)  # [kv head, key, d] float32
        index = torch.tensor(heads, device=device)
        if not scores:  # scaled once here rather than every block of scores
            q = q * float(call.scaling)
        if group > 1 and heads == list(range(self.n_heads)):
            # every head of a grouped-query layer: each K/V head meets its group's queries in
            # one product, [group · rows, d] × [d, keys], which multiplies faster
            q = q.view(k.shape[0], group, *q.shape[1:])  # [kv head, group, query, d]

            def product(start: int, stop: int, ke: int) -> torch.Tensor:
                rows_q = q[:, :, start:stop].reshape(k.shape[0], -1, q.shape[-1])
                return torch.matmul(rows_q, k[:, :ke].transpose(1, 2)).view(
                    len(heads), stop - start, ke)
        else:
            q, k = q.index_select(0, index), k.index_select(0, index // group)

            def product(start: int, stop: int, ke: int) -> torch.Tensor:
                return torch.matmul(q[:, start:stop], k[:, :ke].transpose(1, 2))
        bias = self._addition(call.bias, heads, keys, device)
        additive = None if call.mask is None or call.mask.dtype == bool else self._addition(
            call.mask, heads, keys, device)
        mask = self._mask(layer)
        sinks = None if call.sinks is None or scores else torch.from_numpy(
            np.asarray(call.sinks, np.float32)[heads]).to(device)
        n_k, n_all = self.shape[3], len(keys)
        for start, stop in row_slices(rows, rows_per_block(len(heads), n_all, budget, align[0])):
            ke = n_all if scores else min(n_all,
                                          -(-mask.extent(start, stop) // align[1]) * align[1])
            k0 = n_all if scores or mask.everything else mask.first_forbidden(start, stop)
            weights = recompute(  # [head, rows, keys]
                product(start, stop, ke), call, scaled=not scores,
                bias=None if bias is None else bias(start, stop, ke),
                additive=None if additive is None or scores else additive(start, stop, ke),
                forbidden=mask.forbidden(start, stop, k0, ke, device) if k0 < ke else None,
                masked_from=k0,
                sinks=sinks, dead=mask.dead(start, stop), scores=scores)
            # keys that are not tokens took their share of each row; they are not shown
            yield Block(start, weights[..., :n_k] if ke > n_k else weights)

    def scores(self, layer: int, head: int) -> np.ndarray:
        """Scores before the mask, position bias and soft-capping included: ``[query, key]``."""
        return assemble(self.blocks(layer, [head], scores=True), 1, range(self.shape[2]),
                        self.shape[3])[0]

    def __getitem__(self, index: tuple[int, int]) -> np.ndarray:
        layer, head = index
        return self.layer(layer, [head])[0]

    def layer(self, layer: int, heads=None) -> np.ndarray:
        """Every head of one layer (or ``heads``): ``[head, query, key]``."""
        heads = list(range(self.n_heads)) if heads is None else list(heads)
        return assemble(self.blocks(layer, heads), len(heads), range(self.shape[2]),
                        self.shape[3])

    def stack(self) -> np.ndarray:
        """Every layer and head: ``[layer, head, query, key]``."""
        return np.stack([self.layer(layer) for layer in range(self.shape[0])])


def _is_range(index: np.ndarray, n: int) -> bool:
    """Whether ``index`` is ``0, 1, …, n - 1`` (nothing to select)."""
    return len(index) == n and bool((index == np.arange(n)).all())


class _Mask:
    """A layer's mask, with what blocks need of it: per row, where its allowed keys end."""

    def __init__(self, allowed: np.ndarray):
        self.allowed = allowed
        n_k = allowed.shape[1]
        any_key = allowed.any(axis=1)
        self._end = np.where(any_key, n_k - allowed[:, ::-1].argmax(axis=1), 0)
        self._dead = ~any_key
        self._forbidden = ~allowed
        self._first = np.where(self._forbidden.any(axis=1), self._forbidden.argmax(axis=1), n_k)
        self.everything = bool(allowed.all())
        self._tensors: dict = {}  # the forbidden cells on an accelerator, per device

    def extent(self, start: int, stop: int) -> int:
        """Keys a block of rows ``start..stop`` needs: past them every weight is 0."""
        return max(1, int(self._end[start:stop].max(initial=0)))

    def first_forbidden(self, start: int, stop: int) -> int:
        """The first key any row of ``start..stop`` may not see (``n_keys``: none)."""
        return int(self._first[start:stop].min(initial=self.allowed.shape[1]))

    def dead(self, start: int, stop: int) -> bool:
        """Whether a row of the block may see no key at all."""
        return bool(self._dead[start:stop].any())

    def forbidden(self, start: int, stop: int, k0: int, ke: int,
                  device: torch.device) -> torch.Tensor:
        """Where rows ``start..stop`` may not attend among keys ``k0..ke``: a bool tensor on
        ``device`` (a view of the host's array on the CPU; the array copied once per other
        device)."""
        if device.type == "cpu":
            return torch.from_numpy(self._forbidden)[start:stop, k0:ke]
        key = str(device)
        if key not in self._tensors:
            self._tensors[key] = torch.from_numpy(self._forbidden).to(device)
        return self._tensors[key][start:stop, k0:ke]


class _Band:
    """A mask without a tensor (the model got none; SDPA was causal or saw every key), for a
    sequence whose tokens are all kept: query ``i`` may attend to key ``j`` when ``j ≤ i +
    offset`` (causal: ``offset = keys − queries``), or to every key (``offset`` None). What
    :class:`_Mask` holds as arrays is computed per block, so that a long input keeps no
    ``[query, key]`` array; :attr:`allowed` is made when asked."""

    def __init__(self, n_q: int, n_k: int, offset: int | None):
        self.n_q, self.n_k, self.offset = n_q, n_k, offset
        self.everything = offset is None or offset >= n_k - 1

    @property
    def allowed(self) -> np.ndarray:
        """bool ``[query, key]``, made anew (read-only)."""
        if self.offset is None:
            return readonly(np.ones((self.n_q, self.n_k), bool))
        return readonly(np.tri(self.n_q, self.n_k, k=self.offset, dtype=bool))

    def extent(self, start: int, stop: int) -> int:
        if self.offset is None:
            return max(1, self.n_k)
        return max(1, min(self.n_k, stop + self.offset))

    def first_forbidden(self, start: int, stop: int) -> int:
        if self.offset is None:
            return self.n_k
        return min(self.n_k, max(0, start + self.offset + 1))

    def dead(self, start: int, stop: int) -> bool:
        return self.offset is not None and stop > start and start + self.offset < 0

    def forbidden(self, start: int, stop: int, k0: int, ke: int,
                  device: torch.device) -> torch.Tensor:
        """Where rows ``start..stop`` may not attend among keys ``k0..ke``: bool, on
        ``device``."""
        if self.offset is None:
            return torch.zeros((stop - start, ke - k0), dtype=torch.bool, device=device)
        keys = torch.arange(k0, ke, device=device)
        rows = torch.arange(start, stop, device=device) + self.offset
        return keys[None, :] > rows[:, None]


def padded_weights(call: Call, q_index: list[np.ndarray], k_index: list[np.ndarray],
                   device: torch.device | str | None = None) -> torch.Tensor:
    """Every sequence and head of one recorded call at once, the batch's padding left out:
    ``[batch, head, query, key]`` float32 on ``device``, sequence ``b``'s real queries and
    keys first (``q_index[b]``, ``k_index[b]``: their positions in the padded batch) and zeros
    after them. The formula is :func:`recompute`'s, so each sequence's block equals what
    :meth:`LazyAttention.blocks` computes for it (queries and keys in half precision cast to
    float32 on ``device`` first). ``device`` None: where the call ran (:attr:`Call.device`).
    """
    device = torch.device(device or call.device or "cpu")

    def tensor(array: np.ndarray, dtype: str | None = None) -> torch.Tensor:
        """A recorded array on the device; queries and keys (``dtype`` given) in float32."""
        found = recorded_tensor(array, dtype or "float32").to(device)
        return found if dtype is None else found.float()

    q = tensor(call.q, call.dtype)  # [batch, head, query, d] float32
    k = tensor(call.k, call.dtype)  # [batch, kv head, key, d] float32
    n_heads = q.shape[1]
    k = k.repeat_interleave(n_heads // k.shape[1], dim=1)  # [batch, head, key, d]
    allowed = allowed_keys(call)[:, None]  # [batch or 1, 1, query, key]
    w = recompute(  # [batch, head, query, key]
        torch.matmul(q * float(call.scaling), k.transpose(-1, -2)), call, scaled=True,
        bias=None if call.bias is None else tensor(np.asarray(call.bias, np.float32)),
        additive=None if call.mask is None or call.mask.dtype == bool else tensor(
            np.asarray(call.mask, np.float32)),
        forbidden=None if allowed.all() else tensor(~allowed),
        sinks=None if call.sinks is None else tensor(np.asarray(call.sinks, np.float32)),
        dead=True)
    out = torch.zeros((len(q_index), n_heads, max(map(len, q_index), default=0),
                       max(map(len, k_index), default=0)), dtype=torch.float32, device=device)
    for b, (qi, ki) in enumerate(zip(q_index, k_index)):
        rows = w[b]  # [head, query, key]
        rows = rows[:, :len(qi)] if _is_range(qi, len(qi)) else rows[:, torch.from_numpy(
            qi).to(device)]
        rows = rows[..., :len(ki)] if _is_range(ki, len(ki)) else rows[..., torch.from_numpy(
            ki).to(device)]
        out[b, :, :len(qi), :len(ki)] = rows
    return out
