"""AttentionTrace: the one object that crosses from model/ to viz/ (numpy only, no torch).

Attention is addressed by stack and kind (DESIGN.md):

=================  =============================================================
family             arrays
=================  =============================================================
encoder-only       ``encoder.self``
decoder-only       ``decoder.self`` (causal)
encoder-decoder    ``encoder.self``, ``decoder.self`` (causal), ``decoder.cross``
=================  =============================================================

Each array is ``[layer, head, query, key]`` float32; rows sum to 1; masked entries are exactly 0.
An array may be any object with ``shape`` and ``[layer, head]`` indexing that returns exact
weights (a lazy store computing a head when asked); :meth:`AttentionTrace.stack` materialises it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FAMILIES = ("encoder-only", "decoder-only", "encoder-decoder")
KINDS = {
    "encoder-only": ("encoder.self",),
    "decoder-only": ("decoder.self",),
    "encoder-decoder": ("encoder.self", "decoder.self", "decoder.cross"),
}
CAUSAL_KINDS = ("decoder.self",)


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class AttentionTrace:
    """Token strings, input ids and attention weights of one run, with its metadata.

    Args:
        model: the model's name (a bundled name, hub id or path).
        family: ``encoder-only``, ``decoder-only`` or ``encoder-decoder``.
        attention: ``name -> [layer, head, query, key]`` weights (see module docstring).
        tokens, ids: display tokens and input ids of a single-stack model.
        source_tokens, source_ids, target_tokens, target_ids: the same for encoder-decoder.
        n_heads: query heads per layer.
        n_kv_heads: key/value heads per layer (< n_heads for grouped-query attention; each K/V
            head serves ``n_heads // n_kv_heads`` consecutive query heads).
        positional: the positional scheme (``sinusoidal``, ``rope``, ``learned``, ...).
        device, dtype: where and in what precision the model ran.
        steps: per generation step, the next-token distribution (``{"step", "token",
            "top_k": [[token, probability], ...]}``); empty when nothing was generated.
        meta: further JSON-able facts (``sliding_window``, layer counts per stack, ...).
        raw_scores: optional ``name -> [layer, head, query, key]`` scores QKᵀ/√d_k before the
            mask (the own models record them); lazy stores compute them instead. Not exported.
    """

    model: str
    family: str
    attention: Mapping[str, Any]
    n_heads: int
    n_kv_heads: int
    tokens: np.ndarray | None = None
    ids: np.ndarray | None = None
    source_tokens: np.ndarray | None = None
    source_ids: np.ndarray | None = None
    target_tokens: np.ndarray | None = None
    target_ids: np.ndarray | None = None
    positional: str = "unknown"
    device: str = "cpu"
    dtype: str = "float32"
    steps: tuple = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    raw_scores: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, not {self.family!r}")
        single = self.family != "encoder-decoder"
        token_fields = ("tokens", "ids") if single else (
            "source_tokens", "source_ids", "target_tokens", "target_ids")
        for name in token_fields:
            value = getattr(self, name)
            if value is None:
                raise ValueError(f"a {self.family} trace needs {name}")
            kind = str if name.endswith("tokens") else np.int64
            object.__setattr__(self, name, _readonly(np.asarray(value, dtype=kind)))
        pairs = (("tokens", "ids"),) if single else (
            ("source_tokens", "source_ids"), ("target_tokens", "target_ids"))
        for tok, ids in pairs:
            if len(getattr(self, tok)) != len(getattr(self, ids)):
                raise ValueError(f"{tok} and {ids} differ in length")
        expected = KINDS[self.family]
        if set(self.attention) != set(expected):
            raise ValueError(
                f"a {self.family} trace holds {expected}, got {tuple(self.attention)}")
        if self.n_heads < 1 or self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads}")
        arrays = {}
        for name in expected:
            array = self.attention[name]
            if isinstance(array, np.ndarray):
                array = _readonly(array.astype(np.float32, copy=False))
            shape = tuple(array.shape)
            q_len, k_len = (len(t) for t in self.axes(name))
            if len(shape) != 4 or shape[1] != self.n_heads or shape[2:] != (q_len, k_len):
                raise ValueError(
                    f"{name} has shape {shape}; expected [layer, {self.n_heads} heads, "
                    f"{q_len} queries, {k_len} keys] to match the tokens")
            arrays[name] = array
        object.__setattr__(self, "attention", arrays)
        if self.raw_scores is not None:
            scores = {}
            for name, array in self.raw_scores.items():
                if name not in arrays or tuple(array.shape) != tuple(arrays[name].shape):
                    raise ValueError(f"raw_scores[{name!r}] does not match the attention arrays")
                scores[name] = _readonly(np.asarray(array, dtype=np.float32))
            object.__setattr__(self, "raw_scores", scores)
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "meta", dict(self.meta))

    # --- addressing ---------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """The attention kinds this trace holds, e.g. ``("decoder.self",)``."""
        return KINDS[self.family]

    @property
    def n_layers(self) -> int:
        """Layers of the deepest stack."""
        return max(self.layers(name) for name in self.names)

    def layers(self, name: str) -> int:
        """Number of layers of the stack holding ``name``."""
        self._check_name(name)
        return int(self.attention[name].shape[0])

    def axes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(query tokens, key tokens)`` of attention kind ``name``."""
        self._check_name(name)
        if self.family != "encoder-decoder":
            return self.tokens, self.tokens
        if name == "encoder.self":
            return self.source_tokens, self.source_tokens
        if name == "decoder.self":
            return self.target_tokens, self.target_tokens
        return self.target_tokens, self.source_tokens

    def weights(self, name: str, layer: int, head: int) -> np.ndarray:
        """Attention weights of one head.

        Args:
            name: attention kind, one of :attr:`names`.
            layer: 0-based layer index.
            head: 0-based query-head index.

        Returns:
            float32 ``[query, key]``, rows summing to 1.
        """
        self._check_index(name, layer, head)
        return np.asarray(self.attention[name][layer, head], dtype=np.float32)

    def layer_weights(self, name: str, layer: int) -> np.ndarray:
        """All heads of one layer: float32 ``[head, query, key]``."""
        self._check_index(name, layer, 0)
        return np.stack([self.weights(name, layer, h) for h in range(self.n_heads)])

    def scores(self, name: str, layer: int, head: int) -> np.ndarray:
        """Scores of one head before the mask and softmax: float32 ``[query, key]``.

        They include what the model adds before masking (T5's position bias, soft-capping).
        """
        self._check_index(name, layer, head)
        store = self.attention[name]
        if hasattr(store, "raw_scores"):
            return np.asarray(store.raw_scores(layer, head), dtype=np.float32)
        if self.raw_scores is None or name not in self.raw_scores:
            raise ValueError("this trace holds no scores (an export keeps weights only); "
                             "run the model again to see them")
        return np.asarray(self.raw_scores[name][layer, head], dtype=np.float32)

    def masked_scores(self, name: str, layer: int, head: int) -> np.ndarray:
        """Scores with -inf where the mask forbids attention: what goes into the softmax."""
        return np.where(self.mask(name, layer), self.scores(name, layer, head), -np.inf
                        ).astype(np.float32)

    def mean_weights(self, name: str, layer: int) -> np.ndarray:
        """One layer's weights averaged over its heads: float32 ``[query, key]``."""
        return self.layer_weights(name, layer).mean(axis=0)

    def stack(self, name: str) -> np.ndarray:
        """Every layer and head of ``name``: float32 ``[layer, head, query, key]``."""
        self._check_name(name)
        array = self.attention[name]
        if isinstance(array, np.ndarray):
            return array
        return np.stack([self.layer_weights(name, layer) for layer in range(self.layers(name))])

    def mask(self, name: str, layer: int = 0) -> np.ndarray:
        """Where the model allows attention: bool ``[query, key]`` (True = may attend).

        A lazy store that recorded the model's own mask answers for ``layer``; otherwise causal
        kinds are lower-triangular and a ``sliding_window`` in :attr:`meta` also forbids keys
        more than ``window - 1`` positions behind the query.
        """
        self._check_name(name)
        store = self.attention[name]
        if hasattr(store, "allowed"):
            self._check_index(name, layer, 0)
            return np.asarray(store.allowed(layer), dtype=bool)
        q_tokens, k_tokens = self.axes(name)
        allowed = np.ones((len(q_tokens), len(k_tokens)), dtype=bool)
        if name in CAUSAL_KINDS:
            allowed = np.tril(allowed)
            window = self.meta.get("sliding_window")
            if window:
                allowed &= ~np.tril(allowed, k=-int(window))
        return allowed

    def special(self, name: str) -> tuple[list[int], list[int]]:
        """Positions of special tokens (``[CLS]``, ``<bos>``, ...) on the query and key axes."""
        self._check_name(name)
        marks = self.meta.get("special", {})
        if self.family != "encoder-decoder":
            return list(marks.get("tokens", [])), list(marks.get("tokens", []))
        source, target = list(marks.get("source", [])), list(marks.get("target", []))
        return {"encoder.self": (source, source), "decoder.self": (target, target),
                "decoder.cross": (target, source)}[name]

    def kv_head(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (grouped-query attention)."""
        if not 0 <= head < self.n_heads:
            raise ValueError(f"head {head} is out of range 0..{self.n_heads - 1}")
        return head // (self.n_heads // self.n_kv_heads)

    def _check_name(self, name: str) -> None:
        if name not in self.names:
            raise ValueError(
                f"{name!r} is not in this {self.family} trace; choose from {self.names}")

    def _check_index(self, name: str, layer: int, head: int) -> None:
        self._check_name(name)
        n_layers = self.layers(name)
        if not 0 <= layer < n_layers:
            raise ValueError(f"layer {layer} is out of range 0..{n_layers - 1} for {name}")
        if not 0 <= head < self.n_heads:
            raise ValueError(f"head {head} is out of range 0..{self.n_heads - 1}")

    # --- export -------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The ``meta`` record of the export format."""
        return {
            **self.meta,
            "model": self.model,
            "family": self.family,
            "n_layers": self.n_layers,
            "layers": {name: self.layers(name) for name in self.names},
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "positional": self.positional,
            "device": self.device,
            "dtype": self.dtype,
            "steps": list(self.steps),
        }

    def save(self, path: str | Path) -> Path:
        """Write the export format of DESIGN.md (an ``.npz`` file) and return its path."""
        path = Path(path)
        arrays: dict[str, np.ndarray] = {}
        if self.family == "encoder-decoder":
            for name in ("source_tokens", "source_ids", "target_tokens", "target_ids"):
                arrays[name] = getattr(self, name)
        else:
            arrays["tokens"], arrays["ids"] = self.tokens, self.ids
        for name in self.names:
            arrays[name] = self.stack(name).astype(np.float32, copy=False)
        arrays["meta"] = np.array(json.dumps(self.metadata(), ensure_ascii=False))
        with path.open("wb") as f:
            np.savez(f, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> AttentionTrace:
        """Read a trace written by :meth:`save`."""
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            family = meta.pop("family")
            kwargs = {k: data[k] for k in data.files if k != "meta" and k not in KINDS[family]}
            attention = {name: data[name] for name in KINDS[family]}
        known = ("model", "n_heads", "n_kv_heads", "positional", "device", "dtype", "steps")
        fields = {k: meta.pop(k) for k in known if k in meta}
        for derived in ("n_layers", "layers"):
            meta.pop(derived, None)
        return cls(family=family, attention=attention, meta=meta, **fields, **kwargs)
