"""Numbers of the lessons on the Transformer's insides, read from the own model's forward pass.

Three lessons of the seed look inside one layer of the project's own Transformer
(:mod:`model.own.transformer`):

- §3.2–3.3, the architecture: each sublayer's post-norm residual ``LayerNorm(x + sublayer(x))``;
  :func:`residual_streams` records ``x``, ``sublayer(x)``, ``x + sublayer(x)`` and the
  LayerNorm's output of every sublayer of every layer, and the FFN's real widths;
- §4.2, query, key and value: :func:`query_key_value` follows one token into one head: its
  embedding and position, the head's slices of W_Q, W_K and W_V, its query, every key, and the
  dot products ÷ √d_head;
- §4.6, multi-head: :func:`heads_of_layer` records one attention module's real tensors, from
  ``(B, L, d_model)`` through ``(B, h, L, d_head)`` and each head's pattern to the concatenation
  and W_O.

Every number comes from forward hooks on the real modules during one forward pass of the model
on the ids the trace ran on: nothing here recomputes the model. (The lessons' own arithmetic,
``q · k ÷ √d_head`` and the concatenation, is checked in the tests against what the model
computed itself.) Hooks record only in the thread that opened them, as :mod:`model.own.hooks`
does, so sessions sharing a model never see each other's tensors.
"""

from __future__ import annotations

import contextvars
import itertools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from i18n import _
from model.analysis.cuts import query_rows
from model.meta import Family
from model.trace import AttentionTrace

# The sublayers of each stack's layer, in order: (sublayer, its residual module's attribute).
SUBLAYERS = {
    "encoder": (("self_attn", "residual_attn"), ("ffn", "residual_ffn")),
    "decoder": (("self_attn", "residual_self"), ("cross_attn", "residual_cross"),
                ("ffn", "residual_ffn")),
}
# The four vectors of one Add & Norm, in the order of the lesson.
PARTS = ("x", "update", "total", "normed")
# Where each attention kind lives: (stack, the layer's attribute).
KIND_MODULES = {"encoder.self": ("encoder", "self_attn"), "decoder.self": ("decoder", "self_attn"),
                "decoder.cross": ("decoder", "cross_attn")}

_ACTIVE: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "attention_explorer_lesson_hooks", default=None)
_ids = itertools.count(1)


# --- running the model with hooks ----------------------------------------------------------

def own_network(loaded) -> nn.Module:
    """The torch :class:`~model.own.transformer.Transformer` of an own model.

    Raises:
        ValueError: ``loaded`` is not one of the project's own models.
    """
    from model.own.transformer import Transformer

    network = getattr(loaded, "network", None)
    if not isinstance(network, Transformer):
        raise ValueError(_("This lesson looks inside the project's own Transformer; choose "
                           "own-translator or own-random."))
    return network


def model_inputs(loaded, trace: AttentionTrace) -> dict[str, torch.Tensor]:
    """The keyword arguments of the network's forward pass on the ids the trace ran on."""
    device = loaded.device

    def ids(values) -> torch.Tensor:
        return torch.as_tensor(np.array(values), dtype=torch.long, device=device)[None]

    if trace.family is Family.ENCODER_DECODER:
        return {"src_ids": ids(trace.source_ids), "tgt_ids": ids(trace.target_ids)}
    if trace.family is Family.ENCODER_ONLY:
        return {"src_ids": ids(trace.ids)}
    return {"tgt_ids": ids(trace.ids)}


@contextmanager
def _recording(targets: dict[str, tuple[nn.Module, str]]) -> Iterator[dict]:
    """Record what each target module receives or returns during the forward passes inside.

    Args:
        targets: ``name -> (module, what)``, ``what`` being ``"args"`` (the positional inputs,
            read by a forward pre-hook) or ``"output"`` (the module's return value).

    Yields:
        dict ``name -> `` the recorded inputs (a tuple) or output, detached.
    """
    capture_id = next(_ids)
    store: dict = {}
    handles = []

    def detach(value):
        if isinstance(value, torch.Tensor):
            return value.detach()
        if isinstance(value, tuple):
            return tuple(detach(v) for v in value)
        return value

    def pre_hook(name):
        def hook(_module, args):
            if _ACTIVE.get() == capture_id:
                store[name] = detach(args)
        return hook

    def post_hook(name):
        def hook(_module, _args, output):
            if _ACTIVE.get() == capture_id:
                store[name] = detach(output)
        return hook

    token = _ACTIVE.set(capture_id)
    try:
        for name, (module, what) in targets.items():
            if what == "args":
                handles.append(module.register_forward_pre_hook(pre_hook(name)))
            else:
                handles.append(module.register_forward_hook(post_hook(name)))
        yield store
    finally:
        for handle in handles:
            handle.remove()
        _ACTIVE.reset(token)


def _run(loaded, trace: AttentionTrace, targets: dict[str, tuple[nn.Module, str]]
         ) -> tuple[dict, torch.Tensor]:
    """One forward pass of the own network on the trace's ids, recording ``targets``; returns
    the records and the logits ``[position, vocab]``."""
    network = own_network(loaded)
    with torch.inference_mode(), _recording(targets) as store:
        logits = network(**model_inputs(loaded, trace))[0]
    return store, logits


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float64).numpy()


def _layer_module(network: nn.Module, stack: str, layer: int) -> nn.Module:
    """Layer ``layer`` of ``stack``; an index out of range raises ValueError."""
    block = getattr(network, stack, None)
    if block is None:
        raise ValueError(_("this model has no {stack}").format(stack=stack))
    n_layers = len(block.layers)
    if not 0 <= int(layer) < n_layers:
        raise ValueError(_("layer {layer} is out of range: the {stack} has {count} layers")
                         .format(layer=layer, stack=stack, count=n_layers))
    return block.layers[int(layer)]


def stack_tokens(trace: AttentionTrace, stack: str) -> list[str]:
    """The tokens a stack reads (the source for the encoder, the target for the decoder)."""
    return [str(t) for t in trace.axes(f"{stack}.self")[0]]


# --- §3.2–3.3: residual + LayerNorm ----------------------------------------------------------

@dataclass(frozen=True)
class Residual:
    """One sublayer of one layer with its Add & Norm, at every position of the stack.

    Attributes:
        sublayer: ``self_attn``, ``cross_attn`` or ``ffn``.
        x: what enters the sublayer (the residual stream), float64 ``[position, d_model]``.
        update: the sublayer's output ``sublayer(x)``, ``[position, d_model]``.
        total: ``x + sublayer(x)``, the LayerNorm's input, ``[position, d_model]``.
        normed: ``LayerNorm(x + sublayer(x))``, the stream after the sublayer.
    """

    sublayer: str
    x: np.ndarray
    update: np.ndarray
    total: np.ndarray
    normed: np.ndarray

    def sizes(self, position: int) -> np.ndarray:
        """The L2 norms of :data:`PARTS` at ``position``: ``[4]``."""
        return np.array([np.linalg.norm(getattr(self, part)[position]) for part in PARTS])


@dataclass(frozen=True)
class ResidualLayer:
    """Every sublayer of one layer (see :class:`Residual`) and the FFN's real widths.

    Attributes:
        stack, layer: where it is.
        tokens: the stack's tokens.
        residuals: one per sublayer, in order.
        ffn_shapes: the real shapes of the FFN's input, hidden layer and output, e.g.
            ``((1, 6, 128), (1, 6, 512), (1, 6, 128))``.
    """

    stack: str
    layer: int
    tokens: list[str]
    residuals: tuple[Residual, ...]
    ffn_shapes: tuple[tuple[int, ...], ...]

    def sizes(self, position: int) -> np.ndarray:
        """``[sublayer, part]`` L2 norms at ``position`` (parts as in :data:`PARTS`)."""
        return np.stack([r.sizes(position) for r in self.residuals])


@dataclass(frozen=True)
class Streams:
    """Every layer of every stack (see :class:`ResidualLayer`) and the forward pass's logits.

    Attributes:
        layers: ``(stack, layer) -> ResidualLayer``.
        logits: the network's output of this same pass, float64 ``[position, vocab]``.
        d_model, d_ff: the loaded model's widths (from its modules).
    """

    layers: dict[tuple[str, int], ResidualLayer]
    logits: np.ndarray
    d_model: int
    d_ff: int


def residual_streams(loaded, trace: AttentionTrace) -> Streams:
    """Record the four vectors of every Add & Norm of every layer in one forward pass.

    Forward hooks read each :class:`~model.own.transformer.ResidualNorm`'s inputs ``(x,
    sublayer(x))`` and output, and its LayerNorm's input ``x + sublayer(x)``; the FFN's first
    linear layer gives the hidden width.

    Args:
        loaded: an own model (own-translator, own-random).
        trace: a trace of that model: its ids are what the pass runs on.

    Returns:
        a :class:`Streams`.
    """
    network = own_network(loaded)
    targets = {}
    where = []
    for stack, sublayers in SUBLAYERS.items():
        block = getattr(network, stack, None)
        if block is None:
            continue
        for layer, module in enumerate(block.layers):
            for sublayer, residual in sublayers:
                norm = getattr(module, residual, None)
                if norm is None:  # a decoder without cross-attention
                    continue
                key = f"{stack}.{layer}.{sublayer}"
                targets[key + ".args"] = (norm, "args")
                targets[key + ".normed"] = (norm, "output")
                targets[key + ".total"] = (norm.norm, "args")
                where.append((stack, layer, sublayer, key))
            targets[f"{stack}.{layer}.ffn.hidden"] = (module.ffn.W_1, "output")
            targets[f"{stack}.{layer}.ffn.out"] = (module.ffn, "output")
    store, logits = _run(loaded, trace, targets)
    grouped: dict[tuple[str, int], list[Residual]] = {}
    for stack, layer, sublayer, key in where:
        x, update = store[key + ".args"]
        grouped.setdefault((stack, layer), []).append(Residual(
            sublayer, _numpy(x[0]), _numpy(update[0]), _numpy(store[key + ".total"][0][0]),
            _numpy(store[key + ".normed"][0])))
    layers = {}
    for (stack, layer), residuals in grouped.items():
        ffn_in = next(r for r in residuals if r.sublayer == "ffn").x
        shapes = ((1, *ffn_in.shape), tuple(store[f"{stack}.{layer}.ffn.hidden"].shape),
                  tuple(store[f"{stack}.{layer}.ffn.out"].shape))
        layers[(stack, layer)] = ResidualLayer(stack, layer, stack_tokens(trace, stack),
                                               tuple(residuals), shapes)
    cfg = network.cfg
    return Streams(layers, _numpy(logits), cfg.d_model, cfg.d_ff)


def stacks_of(trace: AttentionTrace) -> list[str]:
    """The stacks of a trace's model, encoder first."""
    return [stack for stack in ("encoder", "decoder") if f"{stack}.self" in trace.names]


# --- §4.2: query, key, value ----------------------------------------------------------------

@dataclass(frozen=True)
class QueryKeyValue:
    """One query token entering one head, and every key it is compared with.

    Attributes:
        name, layer, head, query: the attention kind, layer, head and query position.
        query_tokens, key_tokens: the two axes' tokens.
        d_model, d_head: the model's width and one head's.
        token_embedding: the query token's row of the embedding table, ``[d_model]``.
        scale: what the embeddings multiply it by (√d_model).
        position: the sinusoidal row added for its position, ``[d_model]`` (None with RoPE).
        embedded: the embeddings' output for the token (the input of layer 0), ``[d_model]``.
        x: what enters this layer's attention as the query, ``[d_model]``.
        keys_in: what enters as keys and values, ``[key, d_model]``.
        W_Q, W_K, W_V: this head's slices of the projections, ``[d_head, d_model]`` each.
        b_Q, b_K, b_V: their biases, ``[d_head]``.
        q: the head's query, ``[d_head]``; k, v: every key and value, ``[key, d_head]``.
        scores: the model's own scaled scores of this query, ``[key]`` (before the mask).
        weights: its weights after the mask and softmax, ``[key]``.
        allowed: where the mask lets it look, bool ``[key]``.
    """

    name: str
    layer: int
    head: int
    query: int
    query_tokens: list[str]
    key_tokens: list[str]
    d_model: int
    d_head: int
    token_embedding: np.ndarray
    scale: float
    position: np.ndarray | None
    embedded: np.ndarray
    x: np.ndarray
    keys_in: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    b_Q: np.ndarray
    b_K: np.ndarray
    b_V: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    allowed: np.ndarray

    @property
    def word(self) -> np.ndarray:
        """The token's embedding as the embeddings scale it (× √d_model), ``[d_model]``."""
        return self.token_embedding * self.scale

    @property
    def key_position(self) -> int:
        """The key whose projections the lesson shows beside the query's: the query's own
        token in self-attention; in cross-attention (keys from the other sentence) the key it
        weighs most."""
        if self.name.endswith(".self"):
            return self.query
        return int(np.argmax(self.weights))

    @property
    def dots(self) -> np.ndarray:
        """The query's dot product with every key, ``q · k``: ``[key]``."""
        return self.k @ self.q

    @property
    def scaled(self) -> np.ndarray:
        """``q · k ÷ √d_head`` for every key: what the model's scores hold."""
        return self.dots / math.sqrt(self.d_head)


def _head_slice(linear: nn.Linear, head: int, d_head: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``head·d_head … (head+1)·d_head`` of a projection: the head's weight and bias."""
    rows = slice(head * d_head, (head + 1) * d_head)
    return _numpy(linear.weight[rows]), _numpy(linear.bias[rows])


def _check_head(network: nn.Module, head: int) -> int:
    n_heads = network.cfg.n_heads
    if not 0 <= int(head) < n_heads:
        raise ValueError(_("head {head} is out of range: the model has {count} heads").format(
            head=head, count=n_heads))
    return int(head)


def _attention_module(network: nn.Module, name: str, layer: int) -> nn.Module:
    if name not in KIND_MODULES:
        raise ValueError(_("{name} is not an attention kind of the own model").format(
            name=name))
    stack, attribute = KIND_MODULES[name]
    module = getattr(_layer_module(network, stack, layer), attribute, None)
    if module is None:
        raise ValueError(_("this model has no {name}").format(name=name))
    return module


def _allowed(mask: torch.Tensor | None, n_q: int, n_k: int) -> np.ndarray:
    """The mask the module received, broadcast to ``[query, key]`` (True = may attend)."""
    if mask is None:
        return np.ones((n_q, n_k), dtype=bool)
    full = torch.broadcast_to(mask[0, 0].bool(), (n_q, n_k))  # [query, key]
    return full.cpu().numpy().copy()


def query_key_value(loaded, trace: AttentionTrace, name: str, layer: int, head: int,
                    query: int) -> QueryKeyValue:
    """Follow query token ``query`` into head ``head`` of ``name``'s layer ``layer``.

    Hooks read the embeddings (the token's row and the layer-0 input), the attention module's
    inputs and mask, its per-head Q, K, V, its scores and weights; the projections' slices are
    the module's own parameters.

    Args:
        loaded: an own model; ``trace``: a trace of it.
        name: ``encoder.self``, ``decoder.self`` or ``decoder.cross``.
        layer, head: which head; ``query``: the query position.

    Returns:
        a :class:`QueryKeyValue`.

    Raises:
        ValueError: not an own model, or an index out of range.
    """
    network = own_network(loaded)
    module = _attention_module(network, name, layer)
    head = _check_head(network, head)
    stack = KIND_MODULES[name][0]
    q_tokens, k_tokens = ([str(t) for t in axis] for axis in trace.axes(name))
    if not 0 <= int(query) < len(q_tokens):
        raise ValueError(_("query {query} is out of range: there are {count} queries").format(
            query=query, count=len(q_tokens)))
    query = int(query)
    embeddings = network.src_embed if stack == "encoder" else network.tgt_embed
    store, _logits = _run(loaded, trace, {
        "token": (embeddings.token, "output"), "embedded": (embeddings, "output"),
        "args": (module, "args"), "q": (module.hook_q, "output"), "k": (module.hook_k, "output"),
        "v": (module.hook_v, "output"), "scores": (module.hook_scores, "output"),
        "pattern": (module.hook_pattern, "output")})
    query_in, key_in, _value_in, *rest = store["args"]
    mask = rest[0] if rest else None
    d_head = module.d_head
    pe = embeddings.pe
    weights = {p: _head_slice(getattr(module, f"W_{p}"), head, d_head) for p in "QKV"}
    return QueryKeyValue(
        name=name, layer=int(layer), head=head, query=query, query_tokens=q_tokens,
        key_tokens=k_tokens, d_model=network.cfg.d_model, d_head=d_head,
        token_embedding=_numpy(store["token"][0, query]), scale=math.sqrt(embeddings.d_model),
        position=None if pe is None else _numpy(pe[query]),
        embedded=_numpy(store["embedded"][0, query]), x=_numpy(query_in[0, query]),
        keys_in=_numpy(key_in[0]),
        W_Q=weights["Q"][0], W_K=weights["K"][0], W_V=weights["V"][0],
        b_Q=weights["Q"][1], b_K=weights["K"][1], b_V=weights["V"][1],
        q=_numpy(store["q"][0, head, query]), k=_numpy(store["k"][0, head]),
        v=_numpy(store["v"][0, head]), scores=_numpy(store["scores"][0, head, query]),
        weights=_numpy(store["pattern"][0, head, query]),
        allowed=_allowed(mask, len(q_tokens), len(k_tokens))[query])


def query_choices(trace: AttentionTrace, name: str) -> list[str]:
    """How a query position is named in a menu: ``"2: sat"``, or for the decoder the word the
    row writes (``"3: writes 垫子 (reads 在)"``)."""
    return query_rows(trace, name).hover


# --- §4.6: multi-head --------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadsOfLayer:
    """The real tensors of one multi-head attention module in one forward pass.

    Attributes:
        name, layer: which module.
        query_tokens, key_tokens: the two axes' tokens.
        n_heads, d_model, d_head: its sizes.
        shapes: ``stage -> `` the real shape of that stage's tensor (batch of 1), in order:
            ``input`` (B, L_q, d_model), ``q`` (B, h, L_q, d_head), ``k`` and ``v`` (B, h,
            L_k, d_head), ``pattern`` (B, h, L_q, L_k), ``z`` (B, h, L_q, d_head), ``concat``
            (B, L_q, d_model), ``output`` (B, L_q, d_model).
        x: the query side's input, float64 ``[query, d_model]``.
        patterns: every head's weights, ``[head, query, key]``.
        allowed: the mask, bool ``[query, key]``.
        z: every head's weighted sum of its values, ``[head, query, d_head]``.
        concat: what W_O receives (the heads side by side), ``[query, d_model]``.
        output: what the module returns, ``[query, d_model]``.
    """

    name: str
    layer: int
    query_tokens: list[str]
    key_tokens: list[str]
    n_heads: int
    d_model: int
    d_head: int
    shapes: dict[str, tuple[int, ...]]
    x: np.ndarray
    patterns: np.ndarray
    allowed: np.ndarray
    z: np.ndarray
    concat: np.ndarray
    output: np.ndarray

    def head_columns(self, head: int) -> slice:
        """The columns of the concatenation (and of W_O's input) that hold head ``head``."""
        return slice(head * self.d_head, (head + 1) * self.d_head)


def heads_of_layer(loaded, trace: AttentionTrace, name: str, layer: int) -> HeadsOfLayer:
    """Record one attention module's tensors: its input, the heads' Q, K, V, patterns and
    outputs, W_O's input (the concatenation) and the module's output.

    Args:
        loaded: an own model; ``trace``: a trace of it.
        name: the attention kind; ``layer``: its layer.

    Returns:
        a :class:`HeadsOfLayer`.
    """
    network = own_network(loaded)
    module = _attention_module(network, name, layer)
    store, _logits = _run(loaded, trace, {
        "args": (module, "args"), "q": (module.hook_q, "output"), "k": (module.hook_k, "output"),
        "v": (module.hook_v, "output"), "pattern": (module.hook_pattern, "output"),
        "z": (module.hook_z, "output"), "concat": (module.W_O, "args"),
        "output": (module, "output")})
    query_in, *_rest = store["args"]
    mask = store["args"][3] if len(store["args"]) > 3 else None
    output, _weights = store["output"]
    concat = store["concat"][0]
    shapes = {"input": query_in.shape, "q": store["q"].shape, "k": store["k"].shape,
              "v": store["v"].shape, "pattern": store["pattern"].shape, "z": store["z"].shape,
              "concat": concat.shape, "output": output.shape}
    q_tokens, k_tokens = ([str(t) for t in axis] for axis in trace.axes(name))
    return HeadsOfLayer(
        name=name, layer=int(layer), query_tokens=q_tokens, key_tokens=k_tokens,
        n_heads=module.n_heads, d_model=network.cfg.d_model, d_head=module.d_head,
        shapes={stage: tuple(int(n) for n in shape) for stage, shape in shapes.items()},
        x=_numpy(query_in[0]), patterns=_numpy(store["pattern"][0]),
        allowed=_allowed(mask, len(q_tokens), len(k_tokens)), z=_numpy(store["z"][0]),
        concat=_numpy(concat[0]), output=_numpy(output[0]))
