"""The "What moves" view's numbers for any model that offers its attention's parts (the own models
and Hugging Face models whose attention runs through the recording function): for one sentence,
layer and head, side by side,

- raw weights α_ij;
- weight × ‖value after W_O‖, α_ij ‖v_j W_Oʰ‖ (Kobayashi et al. 2020): what key j actually adds
  to query i's output through head h;
- value zeroing (Mohebbi et al. 2023): how much the layer's output at query i changes
  (1 − cos) when key j's value is zeroed in every head, each row normalised;
- norm-based rollout: :func:`~model.analysis.faithfulness.norm_rollout` of each layer's
  ‖Σ_h α_ij v_j W_Oʰ‖ (Abnar & Zuidema's rollout on Kobayashi's contributions);

head ablation ranked over a layer's heads, and a query–key map of one head (AttentionViz's
joint embedding: Yeh et al. 2023).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from i18n import _
from model.analysis.faithfulness import (
    Ablation,
    AttentionParts,
    layer_contributions,
    norm_rollout,
    row_normalised,
    value_zeroing_scores,
    weight_times_value_norm,
)

# Value zeroing runs one pass per key and rollout keeps a [query, key, d_model] tensor per
# layer: the view is refused past this many tokens (the message says so).
MOVES_LIMIT = 128
METHODS = ("raw", "norm", "zeroing", "rollout")


@dataclass(frozen=True)
class WhatMoves:
    """One head's rows by each method, ``[query, key]``, every row summing to 1 (or 0 where a
    method finds nothing moved); ``rollout`` None for cross-attention (it follows one token
    stream).

    Attributes:
        raw: the head's weights.
        norm: α_ij ‖v_j W_Oʰ‖ of the head, each row divided by its sum.
        norm_absolute: the same before the division (a norm in the model's units).
        zeroing: the layer's value zeroing (every head's value of key j zeroed).
        rollout: norm-based rollout of the stack through this layer.
        allowed: where the head may attend.
    """

    kind: str
    layer: int
    head: int
    raw: np.ndarray
    norm: np.ndarray
    norm_absolute: np.ndarray
    zeroing: np.ndarray
    rollout: np.ndarray | None
    allowed: np.ndarray

    def method(self, name: str) -> np.ndarray | None:
        return {"raw": self.raw, "norm": self.norm, "zeroing": self.zeroing,
                "rollout": self.rollout}[name]

    def largest(self, name: str) -> np.ndarray:
        """``[query]`` each row's largest key by the method, among the keys it may see."""
        matrix = np.nan_to_num(self.method(name), nan=-1.0)
        return np.where(self.allowed, matrix, -np.inf).argmax(axis=-1)

    def disagreement(self, name: str) -> np.ndarray:
        """``[query]`` True where the method's largest key differs from the raw weights'."""
        return self.largest(name) != self.largest("raw")


def check_length(model, text: str, target: str | None = None) -> None:
    """Refuse, before anything runs, a text longer than :data:`MOVES_LIMIT` tokens (on either
    side of an encoder-decoder: the source, and a given target; the model's own translation is
    checked once written, by :func:`check_keys`)."""
    lengths = model.count_tokens(text, target)
    n = max(lengths.source, lengths.target or 0) if target is not None else lengths.source
    _refuse(n)


def check_keys(trace, kind: str) -> None:
    """Refuse a trace (or :class:`AttentionParts`) whose ``kind`` has more queries or keys than
    :data:`MOVES_LIMIT`."""
    trace = getattr(trace, "trace", trace)
    _refuse(max(len(axis) for axis in trace.axes(kind)))


def _refuse(n: int) -> None:
    if n > MOVES_LIMIT:
        raise ValueError(_("What moves reads texts of up to {limit} tokens (value zeroing runs "
                           "the layer once per token); this one has {count}: shorten it.").format(
            limit=MOVES_LIMIT, count=n))


def head_weights(parts: AttentionParts, kind: str, layer: int) -> np.ndarray:
    """``[head, query, key]`` float64 weights of a layer of the parts' trace."""
    trace = parts.trace
    return np.stack([np.asarray(trace.weights(kind, layer, h), np.float64)
                     for h in range(trace.n_heads)])


def norm_based(parts: AttentionParts, kind: str, layer: int) -> np.ndarray:
    """``[head, query, key]`` α_ij ‖v_j W_Oʰ‖ of a layer."""
    return weight_times_value_norm(head_weights(parts, kind, layer), parts.values[kind][layer],
                                   parts.w_o[kind][layer])


def rollout_of_norms(parts: AttentionParts, kind: str) -> np.ndarray:
    """``[layer, query, key]`` norm-based rollout of a self-attention stack."""
    if not kind.endswith(".self"):
        raise ValueError(f"rollout follows one token stream; {kind} is cross-attention")
    return norm_rollout([layer_contributions(head_weights(parts, kind, layer),
                                             parts.values[kind][layer], parts.w_o[kind][layer])
                         for layer in range(len(parts.values[kind]))])


def layer_value_zeroing(model, text: str, parts: AttentionParts, kind: str, layer: int
                        ) -> np.ndarray:
    """``[query, key]`` value zeroing of ``kind``'s ``layer`` for ``text`` (rows normalised):
    one pass per key, each with that key's value zeroed in every head."""
    check_keys(parts, kind)
    outputs = model.layer_outputs(text, kind, layer, list(range(len(parts.trace.axes(kind)[1]))),
                                  parts.target)
    return value_zeroing_scores(outputs[0], outputs[1:])


def what_moves(model, text: str, kind: str, layer: int, head: int,
               parts: AttentionParts | None = None, zeroing: np.ndarray | None = None,
               rollout: np.ndarray | None = None) -> WhatMoves:
    """:class:`WhatMoves` of ``model`` on ``text`` (``parts``, ``zeroing`` and ``rollout`` when
    already computed: they depend on the layer, not on the head)."""
    if parts is None:
        check_length(model, text)
        parts = model.attention_parts(text)
    check_keys(parts, kind)
    trace = parts.trace
    if not 0 <= head < trace.n_heads:
        raise ValueError(f"head {head} is not in 0..{trace.n_heads - 1}")
    weights = np.asarray(trace.weights(kind, layer, head), np.float64)
    moved = norm_based(parts, kind, layer)[head]
    if zeroing is None:
        zeroing = layer_value_zeroing(model, text, parts, kind, layer)
    if rollout is None and kind.endswith(".self"):
        rollout = rollout_of_norms(parts, kind)[layer]
    return WhatMoves(kind=kind, layer=layer, head=head, raw=weights, norm=row_normalised(moved),
                     norm_absolute=moved, zeroing=zeroing, rollout=rollout,
                     allowed=np.asarray(trace.mask(kind, layer), bool))


def rank_heads(model, text: str, kind: str, layer: int, target: str | None = None,
               progress=None) -> list[Ablation]:
    """Each head of ``kind``'s ``layer`` left out alone, largest change first (``progress(done,
    total)`` after each)."""
    n_heads = model.dims.n_heads
    found = []
    for h in range(n_heads):
        found.append(model.ablation(text, kind, layer, [h], target))
        if progress is not None:
            progress(h + 1, n_heads)
    return sorted(found, key=lambda a: -a.change)


@dataclass(frozen=True)
class QKMap:
    """A head's queries and keys in one 2-D map (AttentionViz's joint embedding).

    Attributes:
        points: ``[n_queries + n_keys, 2]``: the queries first, then the keys.
        n_queries: how many of the points are queries.
        method: ``"pca"`` or ``"tsne"``.
        shift: the vector added to every key (the queries' mean minus the keys'), and
        scale: the factor queries were multiplied by (keys divided by it), chosen so that
            queries and keys have the same mean norm; neither changes any row's softmax
            (a constant added to a query's scores, and q·k unchanged by c·q, k/c).
    """

    points: np.ndarray
    n_queries: int
    method: str
    shift: np.ndarray
    scale: float


def joint_normalised(queries: np.ndarray, keys: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """AttentionViz's normalisation: keys translated so that their mean is the queries' mean,
    then queries scaled by c and keys by 1/c so that both have the same mean norm.

    Returns:
        (queries, keys, shift, c).
    """
    q = np.asarray(queries, np.float64)
    k = np.asarray(keys, np.float64)
    shift = q.mean(axis=0) - k.mean(axis=0)
    k = k + shift
    q_norm, k_norm = np.linalg.norm(q, axis=-1).mean(), np.linalg.norm(k, axis=-1).mean()
    c = float(np.sqrt(k_norm / q_norm)) if q_norm > 0 and k_norm > 0 else 1.0
    return q * c, k / c, shift, c


def qk_map(parts: AttentionParts, kind: str, layer: int, head: int, method: str = "pca",
           seed: int = 0) -> QKMap:
    """Every query and key of one head projected jointly to 2-D by ``method`` (PCA, or t-SNE
    from scikit-learn), after :func:`joint_normalised`. A grouped-query head's keys are its K/V
    head's, shared with the other heads of its group (drawn once).
    """
    trace = parts.trace
    queries = parts.queries[kind][layer][head]
    keys = parts.keys[kind][layer][trace.kv_head(head)]
    q, k, shift, c = joint_normalised(queries, keys)
    both = np.concatenate([q, k])
    if method == "pca":
        from sklearn.decomposition import PCA

        points = PCA(n_components=2, random_state=seed).fit_transform(both) \
            if both.shape[0] > 2 else np.pad(both[:, :2], ((0, 0), (0, max(0, 2 - both.shape[1]))))
    elif method == "tsne":
        from sklearn.manifold import TSNE

        perplexity = float(max(2.0, min(30.0, (both.shape[0] - 1) / 3)))
        points = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed
                      ).fit_transform(both)
    else:
        raise ValueError(f"method must be 'pca' or 'tsne', not {method!r}")
    return QKMap(points=np.asarray(points, np.float64), n_queries=len(q), method=method,
                 shift=shift, scale=c)


def with_extras(model, text: str, target: str | None = None,
                methods: tuple[str, ...] | None = None):
    """The trace of ``text`` with What moves' arrays beside its weights (the export format's
    optional ``"{kind}.{method}"`` arrays, :data:`model.trace.EXTRA_METHODS`): ``norm`` (α_ij
    ‖v_j W_Oʰ‖ per head, not divided by the row's sum), ``value_zeroing`` (each layer's, rows
    normalised) and ``rollout`` (norm-based, self-attention kinds only).

    Args:
        methods: which (default all three).

    Raises:
        ValueError: an unknown method, or a text past :data:`MOVES_LIMIT` tokens.
        CaptureError: a model whose values or output projections cannot be reached.
    """
    import dataclasses

    from model.trace import EXTRA_METHODS

    methods = tuple(EXTRA_METHODS if methods is None else methods)
    unknown = [m for m in methods if m not in EXTRA_METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}: choose from {EXTRA_METHODS}")
    check_length(model, text, target)
    parts = model.attention_parts(text, target)
    trace = parts.trace
    extras: dict[str, np.ndarray] = {}
    for kind in trace.names:
        check_keys(parts, kind)
        for layer in range(trace.layers(kind)):
            if "norm" in methods:
                extras.setdefault(f"{kind}.norm", []).append(norm_based(parts, kind, layer))
            if "value_zeroing" in methods:
                extras.setdefault(f"{kind}.value_zeroing", []).append(
                    layer_value_zeroing(model, text, parts, kind, layer))
    if "rollout" in methods:
        for kind in trace.names:
            if kind.endswith(".self"):
                extras[f"{kind}.rollout"] = rollout_of_norms(parts, kind)
    arrays = {key: np.asarray(value, np.float32) for key, value in extras.items()}
    return dataclasses.replace(trace, extras=arrays)
