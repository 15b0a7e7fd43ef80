"""Numbers of the lesson §3.2–3.3, the architecture: each sublayer's post-norm residual
``LayerNorm(x + sublayer(x))`` read from the own model's forward pass.

:func:`residual_streams` records ``x``, ``sublayer(x)``, ``x + sublayer(x)`` and the LayerNorm's
output of every sublayer of every layer, and the FFN's real widths, from the residual-stream
hook names of :mod:`model.own.transformer` (one pass, :func:`.network.run`). The lesson's
arithmetic is checked in the tests against what the model computed itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.lessons.network import own_network, run, stack_tokens, to_numpy
from model.own.hooks import INPUT, hook_name
from model.trace import AttentionTrace

# The sublayers of each stack's layer, in order: (sublayer, its residual module's attribute).
SUBLAYERS = {
    "encoder": (("self_attn", "residual_attn"), ("ffn", "residual_ffn")),
    "decoder": (("self_attn", "residual_self"), ("cross_attn", "residual_cross"),
                ("ffn", "residual_ffn")),
}
# The four vectors of one Add & Norm, in the order of the lesson.
PARTS = ("x", "update", "total", "normed")


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

    The hooks read each :class:`~model.own.transformer.ResidualNorm`'s inputs ``x`` and
    ``sublayer_out`` and its output, and its LayerNorm's input ``x + sublayer(x)``; the FFN's
    first linear layer gives the hidden width.

    Args:
        loaded: an own model (own-translator, own-random).
        trace: a trace of that model: its ids are what the pass runs on.

    Returns:
        a :class:`Streams`.
    """
    network = own_network(loaded)
    outputs, inputs = [], []
    where = []  # (stack, layer, sublayer, the residual module, the layer's FFN)
    for stack, sublayers in SUBLAYERS.items():
        block = getattr(network, stack, None)
        if block is None:
            continue
        for layer, module in enumerate(block.layers):
            for sublayer, residual in sublayers:
                norm = getattr(module, residual, None)
                if norm is None:  # a decoder without cross-attention
                    continue
                outputs.append(norm)
                inputs += [norm, norm.norm]
                where.append((stack, layer, sublayer, norm, module.ffn))
            outputs += [module.ffn.W_1, module.ffn]
    store, logits = run(loaded, trace, outputs, inputs)
    grouped: dict[tuple[str, int], list[Residual]] = {}
    ffns = {}
    for stack, layer, sublayer, norm, ffn in where:
        received = store[hook_name(norm) + INPUT]  # x, sublayer_out: [batch, pos, d_model]
        total = store[hook_name(norm.norm) + INPUT]["input"]  # x + sublayer(x)
        grouped.setdefault((stack, layer), []).append(Residual(
            sublayer, to_numpy(received["x"][0]), to_numpy(received["sublayer_out"][0]),
            to_numpy(total[0]), to_numpy(store[hook_name(norm)][0])))
        ffns[(stack, layer)] = ffn
    layers = {}
    for (stack, layer), residuals in grouped.items():
        ffn = ffns[(stack, layer)]
        ffn_in = next(r for r in residuals if r.sublayer == "ffn").x
        shapes = ((1, *ffn_in.shape), tuple(store[hook_name(ffn.W_1)].shape),
                  tuple(store[hook_name(ffn)].shape))
        layers[(stack, layer)] = ResidualLayer(stack, layer, stack_tokens(trace, stack),
                                               tuple(residuals), shapes)
    cfg = network.cfg
    return Streams(layers, to_numpy(logits), cfg.d_model, cfg.d_ff)


def stacks_of(trace: AttentionTrace) -> list[str]:
    """The stacks of a trace's model, encoder first."""
    return [stack for stack in ("encoder", "decoder") if f"{stack}.self" in trace.names]
