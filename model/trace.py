"""AttentionTrace: the one object that crosses from model/ to viz/ (numpy only, no torch).

Attention is addressed by stack and kind (DESIGN.md):

=================  =============================================================
family             arrays
=================  =============================================================
encoder-only       ``encoder.self``
decoder-only       ``decoder.self`` (causal)
encoder-decoder    ``encoder.self``, ``decoder.self`` (causal), ``decoder.cross``
=================  =============================================================

Each kind is ``[layer, head, query, key]`` float32; rows sum to 1; masked entries are exactly 0.
A trace holds every kind its model has: all of its family's, or fewer where the model lacks some
(the recurrent translators, encoder-decoders with cross-attention only); :attr:`names` lists them.
Every kind lives in an :class:`~model.store.AttentionStore` (weights, scores and masks through one
interface); a plain numpy array given for a kind is kept in a :class:`~model.store.DenseStore`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from i18n import _
from model.meta import (
    CAUSAL_KINDS,
    Family,
    ModelDims,
    PositionInfo,
    Step,
    dims_from_facts,
)
from model.store import BLOCK_BYTES, AttentionStore, Block, DenseStore, check_index, readonly

TOKEN_FIELDS = {"tokens": ("tokens", "ids"), "source": ("source_tokens", "source_ids"),
                "target": ("target_tokens", "target_ids")}


# What moves' arrays a trace may carry beside its weights ("{kind}.{method}"): weight ×
# ‖value after W_O‖ per head [layer, head, query, key]; value zeroing and norm-based rollout per
# layer [layer, query, key] (model.analysis.moves).
EXTRA_METHODS = ("norm", "value_zeroing", "rollout")


@dataclass(frozen=True)
class AttentionTrace:
    """Token strings, input ids and attention weights of one run, with its metadata.

    Every method taking a layer or head index takes a Python int or a numpy integer, 0-based
    and non-negative: a bool, a float, a string or None raises :class:`TypeError`, an index
    out of range raises :class:`~model.store.IndexOutOfRange` (an :class:`IndexError` and a
    :class:`ValueError`) naming the valid range; an unknown kind name raises
    :class:`ValueError` naming the kinds (a name that is not a string, :class:`TypeError`).

    Args:
        model: the model's name (a bundled name, hub id or path).
        family: a :class:`~model.meta.Family` (or its string).
        attention: ``kind -> `` an :class:`~model.store.AttentionStore` or a numpy array
            ``[layer, head, query, key]`` of weights: every kind of the family, or the ones
            the model has (at least one; the recurrent translators: ``decoder.cross``).
        tokens, ids: display tokens and input ids of a single-stack model.
        source_tokens, source_ids, target_tokens, target_ids: the same for encoder-decoder.
        n_heads: query heads per layer.
        n_kv_heads: key/value heads per layer (< n_heads for grouped-query attention; each K/V
            head serves ``n_heads // n_kv_heads`` consecutive query heads).
        positional: the positional scheme (``sinusoidal``, ``rope``, ``learned``, ...).
        device, dtype: where and in what precision the model ran.
        steps: per generation step, a :class:`~model.meta.Step`; empty when nothing was
            generated.
        special_positions: positions of special tokens (``[CLS]``, ``<bos>``) per token axis
            (``tokens``, or ``source`` and ``target``).
        meta: further JSON-able facts; the models write :data:`model.meta.FACT_KEYS`. A
            ``"special"`` entry (how older exports kept special positions) moves to
            ``special_positions``.
        unknown: per token axis, the positions of unknown tokens (``[UNK]``: the tokenizer had
            no token for that text) and the input text each replaced (``""`` where unknown).
        extras: optional arrays beside the weights, named ``"{kind}.{method}"`` (What moves:
            :data:`EXTRA_METHODS`, made by :func:`model.analysis.moves.with_extras`), each
            float32 ``[layer, head, query, key]`` or ``[layer, query, key]``; exported as they
            are, and older files without them load with none.
    """

    model: str
    family: Family
    attention: Mapping[str, AttentionStore | np.ndarray]
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
    steps: tuple[Step, ...] = ()
    special_positions: Mapping[str, Sequence[int]] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    unknown: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        family = Family.parse(self.family)
        object.__setattr__(self, "family", family)
        meta = dict(self.meta)
        recorded = meta.pop("special", None)  # where traces before 2026-11 kept the positions
        if recorded and not self.special_positions:
            object.__setattr__(self, "special_positions", recorded)
        object.__setattr__(self, "meta", meta)
        for axis in family.axis_names:
            tok, ids = TOKEN_FIELDS[axis]
            for name in (tok, ids):
                value = getattr(self, name)
                if value is None:
                    raise ValueError(f"a {family} trace needs {name}")
                kind = str if name == tok else np.int64
                object.__setattr__(self, name, readonly(np.asarray(value, dtype=kind)))
            if len(getattr(self, tok)) != len(getattr(self, ids)):
                raise ValueError(f"{tok} and {ids} differ in length")
        if not self.attention or not set(self.attention) <= set(family.kinds):
            raise ValueError(f"a {family} trace holds some of {family.kinds} (at least one), "
                             f"got {tuple(self.attention)}")
        if self.n_heads < 1 or self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_kv_heads={self.n_kv_heads} must divide n_heads={self.n_heads}")
        stores = {}
        for name in (kind for kind in family.kinds if kind in self.attention):
            store = self.attention[name]
            if isinstance(store, np.ndarray):
                store = DenseStore(store, causal=name in CAUSAL_KINDS,
                                   window=self.meta.get("sliding_window"))
            if not isinstance(store, AttentionStore):
                raise TypeError(f"{name} must be a numpy array or an AttentionStore, not "
                                f"{type(store).__name__}")
            shape = tuple(store.shape)
            q_len, k_len = (len(t) for t in self.axes(name))
            if len(shape) != 4 or shape[1] != self.n_heads or shape[2:] != (q_len, k_len):
                raise ValueError(
                    f"{name} has shape {shape}; expected [layer, {self.n_heads} heads, "
                    f"{q_len} queries, {k_len} keys] to match the tokens")
            stores[name] = store
        object.__setattr__(self, "attention", stores)
        steps = tuple(self.steps)
        if not all(isinstance(step, Step) for step in steps):
            raise TypeError("steps must be model.meta.Step records")
        object.__setattr__(self, "steps", steps)
        special = {axis: tuple(self._check_positions(axis, positions, "special positions"))
                   for axis, positions in dict(self.special_positions).items()}
        object.__setattr__(self, "special_positions", special)
        unknown = {}
        for axis, texts in dict(self.unknown).items():
            positions = self._check_positions(axis, texts, "unknown tokens")
            unknown[axis] = {p: str(texts[key]) for p, key in zip(positions, texts)}
        object.__setattr__(self, "unknown", unknown)
        extras = {}
        for key, array in dict(self.extras).items():
            kind, _dot, method = str(key).rpartition(".")
            if kind not in stores or method not in EXTRA_METHODS:
                raise ValueError(f"an extra array is named kind.method ({tuple(stores)}, "
                                 f"{EXTRA_METHODS}), not {key!r}")
            array = np.asarray(array, dtype=np.float32)
            q_len, k_len = (len(t) for t in self.axes(kind))
            if array.ndim not in (3, 4) or array.shape[0] != self.layers(kind) or \
                    array.shape[-2:] != (q_len, k_len) or \
                    (array.ndim == 4 and array.shape[1] != self.n_heads):
                raise ValueError(f"extra {key} has shape {array.shape}; expected [layer, (head,) "
                                 f"{q_len} queries, {k_len} keys]")
            extras[key] = readonly(array)
        object.__setattr__(self, "extras", extras)

    def _check_positions(self, axis: str, positions, what: str) -> list[int]:
        """``positions`` as ints, checked against the length of token axis ``axis``."""
        if axis not in self.family.axis_names:
            raise ValueError(f"{what} for {axis!r}: a {self.family} trace has the token axes "
                             f"{self.family.axis_names}")
        n = len(getattr(self, TOKEN_FIELDS[axis][0]))
        positions = list(positions)
        for p in positions:
            if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
                raise TypeError(f"{what} must be integers, not {type(p).__name__} {p!r}")
        positions = [int(p) for p in positions]
        if any(not 0 <= p < n for p in positions):
            raise ValueError(f"{what} {positions} fall outside {n} {axis}")
        return positions

    # --- addressing ---------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """The attention kinds this trace holds, in stack order, e.g. ``("decoder.self",)``:
        its family's (:attr:`~model.meta.Family.kinds`), or those of them its model has."""
        return tuple(self.attention)

    @property
    def n_layers(self) -> int:
        """Layers of the deepest stack."""
        return max(self.layers(name) for name in self.names)

    def layers(self, name: str) -> int:
        """Number of layers of the stack holding ``name``."""
        return int(self._store(name).shape[0])

    def axis_tokens(self, axis: str) -> np.ndarray:
        """Display tokens of token axis ``axis`` (``tokens``, ``source`` or ``target``)."""
        if axis not in self.family.axis_names:
            raise ValueError(f"a {self.family} trace has the token axes "
                             f"{self.family.axis_names}, not {axis!r}")
        return getattr(self, TOKEN_FIELDS[axis][0])

    def axes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(query tokens, key tokens)`` of attention kind ``name``."""
        self._check_name(name)
        q_axis, k_axis = self.family.axes(name)
        return self.axis_tokens(q_axis), self.axis_tokens(k_axis)

    def weights(self, name: str, layer: int, head: int) -> np.ndarray:
        """Attention weights of one head.

        Args:
            name: attention kind, one of :attr:`names`.
            layer: 0-based layer index.
            head: 0-based query-head index.

        Returns:
            float32 ``[query, key]``, rows summing to 1.

        Raises:
            TypeError: ``layer`` or ``head`` is not an integer (a bool included).
            IndexError: ``layer`` or ``head`` is out of range (also a ValueError).
            ValueError: ``name`` is not one of :attr:`names`.
        """
        layer, head = self._layer(name, layer), self._head(head)
        return np.asarray(self.attention[name][layer, head], dtype=np.float32)

    def layer_weights(self, name: str, layer: int) -> np.ndarray:
        """All heads of one layer: float32 ``[head, query, key]``, the caller's own copy."""
        layer = self._layer(name, layer)
        return np.require(self.attention[name].layer(layer), np.float32, ["W"])

    def mean_weights(self, name: str, layer: int) -> np.ndarray:
        """One layer's weights averaged over its heads: float32 ``[query, key]``."""
        layer = self._layer(name, layer)  # read in place: the mean is a new array anyway
        return np.asarray(self.attention[name].layer(layer), np.float32).mean(axis=0)

    def head_or_mean(self, name: str, layer: int, head: int | None) -> np.ndarray:
        """One head's weights, or (``head=None``) the layer's average over heads."""
        if head is None:
            return self.mean_weights(name, layer)
        return self.weights(name, layer, head)

    def stack(self, name: str) -> np.ndarray:
        """Every layer and head of ``name``: read-only float32 ``[layer, head, query, key]``."""
        array = np.asarray(self._store(name).stack(), dtype=np.float32)
        return readonly(array)

    def blocks(self, name: str, layer: int, heads=None, rows: range | None = None,
               budget: int = BLOCK_BYTES, align: tuple[int, int] = (1, 1)) -> Iterator[Block]:
        """One layer's weights in blocks of query rows (see :mod:`model.reading.blocks`, which reads
        them): ``[head, rows, keys]`` at most ``budget`` bytes at a time, computed where the
        model ran for a trace that computes heads when asked.

        Args:
            heads: the heads (default all), in the order the blocks hold them.
            rows: the query rows (default all), a range of step 1 inside the queries.
            align: ``(rows, keys)``: blocks hold a multiple of this many rows (the last one
                excepted) and of keys (or every key), for readers that pool.
        """
        layer = self._layer(name, layer)
        heads = None if heads is None else [self._head(h) for h in heads]
        n_q = self.attention[name].shape[2]
        if rows is not None and not (isinstance(rows, range) and rows.step == 1
                                     and 0 <= rows.start <= rows.stop <= n_q):
            raise ValueError(f"rows {rows!r} must be a range of step 1 inside 0..{n_q}")
        return self.attention[name].blocks(layer, heads, rows, budget, align)

    def scores(self, name: str, layer: int, head: int) -> np.ndarray:
        """Scores of one head before the mask and softmax: float32 ``[query, key]``.

        They include what the model adds before masking (T5's position bias, soft-capping).

        Raises:
            ValueError: the trace keeps weights only (a loaded export).
        """
        layer, head = self._layer(name, layer), self._head(head)
        return np.asarray(self.attention[name].scores(layer, head), dtype=np.float32)

    def masked_scores(self, name: str, layer: int, head: int) -> np.ndarray:
        """Scores with -inf where the mask forbids attention: what goes into the softmax."""
        return np.where(self.mask(name, layer), self.scores(name, layer, head), -np.inf
                        ).astype(np.float32)

    def mask(self, name: str, layer: int = 0) -> np.ndarray:
        """Where layer ``layer`` of ``name`` may attend: bool ``[query, key]`` (True = may).

        Pretrained models answer with the mask they received; the own models and loaded
        exports with the rule (lower-triangular for causal kinds, and the sliding window).
        """
        layer = self._layer(name, layer)
        return np.asarray(self.attention[name].mask(layer), dtype=bool)

    def special(self, name: str) -> tuple[list[int], list[int]]:
        """Positions of special tokens (``[CLS]``, ``<bos>``, ...) on the query and key axes."""
        self._check_name(name)
        q_axis, k_axis = self.family.axes(name)
        return (list(self.special_positions.get(q_axis, ())),
                list(self.special_positions.get(k_axis, ())))

    def kv_head(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (grouped-query attention)."""
        return self._head(head) // (self.n_heads // self.n_kv_heads)

    @property
    def dims(self) -> ModelDims | None:
        """The model's sizes recorded in :attr:`meta` (None for a hand-built trace)."""
        return dims_from_facts(self.meta, self.n_heads, self.n_kv_heads)

    @property
    def positions(self) -> PositionInfo:
        """The positional scheme and the parameters recorded in :attr:`meta`."""
        return PositionInfo(self.positional, rope_theta=self.meta.get("rope_theta"),
                            max_positions=self.meta.get("max_positions"),
                            sliding_window=self.meta.get("sliding_window"))

    def _store(self, name: str) -> AttentionStore:
        self._check_name(name)
        return self.attention[name]

    def _check_name(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"the attention kind must be a string, one of {self.names}; not "
                            f"{type(name).__name__} {name!r}")
        if name not in self.names:
            raise ValueError(_("{name} is not in this {family} trace; choose from {names}").format(
                name=repr(name), family=self.family.value, names=self.names))

    def _layer(self, name: str, layer: int) -> int:
        """``layer`` checked against the layers of ``name`` (and ``name`` checked)."""
        n = self.layers(name)
        return check_index(layer, n, _("layer"),
                           _("{name} has {count} layers").format(name=name, count=n))

    def _head(self, head: int) -> int:
        """``head`` checked against the query heads."""
        return check_index(head, self.n_heads, _("head"),
                           _("{count} query heads per layer").format(count=self.n_heads))

    # --- export -------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The ``meta`` record of the export format."""
        return {
            **self.meta,
            "model": self.model,
            "family": self.family.value,
            "n_layers": self.n_layers,
            "layers": {name: self.layers(name) for name in self.names},
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "positional": self.positional,
            "device": self.device,
            "dtype": self.dtype,
            "special": {axis: list(p) for axis, p in self.special_positions.items()},
            "unknown": {axis: {str(p): text for p, text in texts.items()}
                        for axis, texts in self.unknown.items()},
            "steps": [step.to_dict() for step in self.steps],
        }

    def save(self, path: str | Path) -> Path:
        """Write the export format (an ``.npz`` file; docs/export-format.md) and return its path."""
        path = Path(path)
        arrays: dict[str, np.ndarray] = {}
        for axis in self.family.axis_names:
            for name in TOKEN_FIELDS[axis]:
                arrays[name] = getattr(self, name)
        for name in self.names:
            arrays[name] = self.stack(name)
        arrays.update(self.extras)
        arrays["meta"] = np.array(json.dumps(self.metadata(), ensure_ascii=False))
        with path.open("wb") as f:
            np.savez(f, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> AttentionTrace:
        """Read a trace written by :meth:`save`."""
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            family = Family.parse(meta.pop("family"))
            extra = [k for k in data.files if k.rpartition(".")[2] in EXTRA_METHODS
                     and k.rpartition(".")[0] in family.kinds]
            kwargs = {k: data[k] for k in data.files
                      if k != "meta" and k not in family.kinds and k not in extra}
            # the kinds the file holds: all of the family's, or the ones its model has
            attention = {name: data[name] for name in family.kinds if name in data.files}
            extras = {k: data[k] for k in extra}
        known = ("model", "n_heads", "n_kv_heads", "positional", "device", "dtype")
        fields = {k: meta.pop(k) for k in known if k in meta}
        meta.pop("n_layers", None)
        written = meta.pop("layers", None)  # the kinds the file was written with
        if isinstance(written, dict) and set(written) != set(attention):
            raise ValueError(f"{path} was written with {sorted(written)} but holds "
                             f"{sorted(attention)}: it is incomplete")
        steps = tuple(Step.from_dict(record) for record in meta.pop("steps", []))
        unknown = {axis: {int(p): text for p, text in texts.items()}  # JSON keys are strings
                   for axis, texts in meta.pop("unknown", {}).items()}
        return cls(family=family, attention=attention, meta=meta, steps=steps, unknown=unknown,
                   extras=extras, **fields, **kwargs)
