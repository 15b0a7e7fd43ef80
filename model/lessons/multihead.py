"""Numbers of the lesson §4.6, multi-head attention, read from the own model's forward pass.

:func:`heads_of_layer` records one attention module's real tensors, from ``(B, L, d_model)``
through ``(B, h, L, d_head)`` and each head's pattern to the concatenation and W_O
(:func:`.network.run`, the module's hook points and the inputs of W_O). The concatenation is
checked in the tests against what the model computed itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.lessons.network import allowed, attention_module, own_network, run, to_numpy
from model.own.hooks import INPUT, hook_name
from model.trace import AttentionTrace


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
    module = attention_module(network, name, layer)
    points = {"q": module.hook_q, "k": module.hook_k, "v": module.hook_v,
              "pattern": module.hook_pattern, "z": module.hook_z, "output": module}
    store, _logits = run(loaded, trace, points.values(), [module, module.W_O])
    seen = {key: store[hook_name(point)] for key, point in points.items()}
    received = store[hook_name(module) + INPUT]  # query, key, value, mask, …
    query_in = received["query"]  # [batch, query, d_model]
    output, _weights = seen["output"]
    concat = store[hook_name(module.W_O) + INPUT]["input"]  # [batch, query, d_model]
    shapes = {"input": query_in.shape, "q": seen["q"].shape, "k": seen["k"].shape,
              "v": seen["v"].shape, "pattern": seen["pattern"].shape, "z": seen["z"].shape,
              "concat": concat.shape, "output": output.shape}
    q_tokens, k_tokens = ([str(t) for t in axis] for axis in trace.axes(name))
    return HeadsOfLayer(
        name=name, layer=int(layer), query_tokens=q_tokens, key_tokens=k_tokens,
        n_heads=module.n_heads, d_model=network.cfg.d_model, d_head=module.d_head,
        shapes={stage: tuple(int(n) for n in shape) for stage, shape in shapes.items()},
        x=to_numpy(query_in[0]), patterns=to_numpy(seen["pattern"][0]),
        allowed=allowed(received["mask"], len(q_tokens), len(k_tokens)),
        z=to_numpy(seen["z"][0]), concat=to_numpy(concat[0]), output=to_numpy(output[0]))
