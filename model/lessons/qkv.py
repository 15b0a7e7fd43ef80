"""Numbers of the lesson §4.2, query, key and value, read from the own model's forward pass.

:func:`query_key_value` follows one token into one head: its embedding and position, the head's
slices of W_Q, W_K and W_V, its query, every key, and the dot products ÷ √d_head. The hooks
(:func:`.network.run`) read the embeddings, the attention module's inputs and mask and its hook
points; the projections' slices are the module's own parameters. (The lesson's own arithmetic,
``q · k ÷ √d_head``, is checked in the tests against what the model computed itself.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from torch import nn

from i18n import _
from model.lessons.network import (
    allowed,
    attention_module,
    check_head,
    own_network,
    run,
    to_numpy,
)
from model.own.hooks import INPUT, hook_name
from model.own.transformer import ATTENTION_MODULES
from model.trace import AttentionTrace


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
    return to_numpy(linear.weight[rows]), to_numpy(linear.bias[rows])


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
    module = attention_module(network, name, layer)
    head = check_head(network, head)
    stack = ATTENTION_MODULES[name][0]
    q_tokens, k_tokens = ([str(t) for t in axis] for axis in trace.axes(name))
    if not 0 <= int(query) < len(q_tokens):
        raise ValueError(_("query {query} is out of range: there are {count} queries").format(
            query=query, count=len(q_tokens)))
    query = int(query)
    embeddings = network.src_embed if stack == "encoder" else network.tgt_embed
    points = {"token": embeddings.token, "embedded": embeddings, "q": module.hook_q,
              "k": module.hook_k, "v": module.hook_v, "scores": module.hook_scores,
              "pattern": module.hook_pattern}
    store, _logits = run(loaded, trace, points.values(), [module])
    seen = {key: store[hook_name(point)] for key, point in points.items()}
    received = store[hook_name(module) + INPUT]  # query, key, value, mask, …
    d_head = module.d_head
    pe = embeddings.pe
    weights = {p: _head_slice(getattr(module, f"W_{p}"), head, d_head) for p in "QKV"}
    return QueryKeyValue(
        name=name, layer=int(layer), head=head, query=query, query_tokens=q_tokens,
        key_tokens=k_tokens, d_model=network.cfg.d_model, d_head=d_head,
        token_embedding=to_numpy(seen["token"][0, query]), scale=math.sqrt(embeddings.d_model),
        position=None if pe is None else to_numpy(pe[query]),
        embedded=to_numpy(seen["embedded"][0, query]), x=to_numpy(received["query"][0, query]),
        keys_in=to_numpy(received["key"][0]),
        W_Q=weights["Q"][0], W_K=weights["K"][0], W_V=weights["V"][0],
        b_Q=weights["Q"][1], b_K=weights["K"][1], b_V=weights["V"][1],
        q=to_numpy(seen["q"][0, head, query]), k=to_numpy(seen["k"][0, head]),
        v=to_numpy(seen["v"][0, head]), scores=to_numpy(seen["scores"][0, head, query]),
        weights=to_numpy(seen["pattern"][0, head, query]),
        allowed=allowed(received["mask"], len(q_tokens), len(k_tokens))[query])
