"""Hook names, hook points and the one recorder of the own models (TransformerLens style).

Every module of a model has a hook name: its path in the model (``"encoder.layers.0.self_attn"``),
set once when the model is built (:func:`name_hooks`, called by the constructor of
:class:`model.own.transformer.Transformer`) and kept by copies of the module. A
:class:`HookPoint` is an identity module placed after a computation whose value we want to see
(attention scores, attention patterns); the points of the own Transformer and the residual
stream's hook names, with their shapes, are listed in :mod:`model.own.transformer`.

:func:`record` is the one recorder: it registers forward hooks on the modules it is given,
yields a dict that fills up during the forward passes inside the block (what each module
returns, under its hook name, and what each module of ``inputs`` receives, under its hook name
plus :data:`INPUT`), and removes every hook in ``finally``, also when the forward pass raises.
:func:`capture` records a model's hook points with it (the traces use it; the lessons record
any module). :func:`intervene` replaces what hook points return (a head ablated, a value
zeroed: :mod:`model.own.ablation`).

A model object may be shared by several threads (Streamlit sessions). Hooks live on the shared
modules, so each hook records only when the thread running the forward pass opened its record
(a context variable carries the identities of the records open in this thread).
"""

from __future__ import annotations

import contextvars
import inspect
import itertools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

_ACTIVE_RECORDS: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "attention_explorer_capture", default=frozenset()
)
_record_ids = itertools.count(1)
# What a module of ``inputs`` received is kept under its hook name plus this suffix.
INPUT = ".input"


class HookPoint(nn.Identity):
    """An identity module: a named place where a forward hook can read an intermediate value."""


def name_hooks(model: nn.Module) -> None:
    """Give every module of ``model`` its path as its hook name (``module.hook_name``; ``""``
    for ``model`` itself). Called once by the model's constructor, after its modules are
    built."""
    for name, module in model.named_modules():
        module.hook_name = name


def hook_name(module: nn.Module) -> str:
    """The hook name set when ``module``'s model was built.

    Raises:
        ValueError: the module was built outside a named model.
    """
    name = getattr(module, "hook_name", None)
    if name is None:
        raise ValueError(f"{type(module).__name__} has no hook name: build it inside a model "
                         "whose constructor calls name_hooks()")
    return name


def hook_point_names(model: nn.Module) -> list[str]:
    """Names of every :class:`HookPoint` in ``model``, in module order."""
    return [name for name, _module in _hook_points(model)]


def _hook_points(model: nn.Module) -> list[tuple[str, HookPoint]]:
    """``(name, point)`` of every hook point of ``model``: its hook name when it has one (set
    at construction, so a sub-module's points keep their names in the whole model), else its
    path in ``model``."""
    return [(getattr(module, "hook_name", name), module) for name, module in model.named_modules()
            if isinstance(module, HookPoint)]


def _detach(value):
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, tuple):
        return tuple(_detach(v) for v in value)
    if isinstance(value, dict):
        return {key: _detach(v) for key, v in value.items()}
    return value


def _arguments(module: nn.Module, args: tuple, kwargs: dict) -> dict[str, Any]:
    """A forward call's arguments by parameter name, defaults filled in (``{"query": ...,
    "key": ..., "value": ..., "mask": None, ...}`` for an attention module)."""
    try:
        bound = inspect.signature(module.forward).bind(*args, **kwargs)
    except TypeError:  # a forward of *args: the positions are the names
        return {str(i): value for i, value in enumerate(args)} | kwargs
    bound.apply_defaults()
    return dict(bound.arguments)


@contextmanager
def record(outputs: Iterable[nn.Module] | dict[str, nn.Module] = (),
           inputs: Iterable[nn.Module] = ()) -> Iterator[dict[str, Any]]:
    """Record what modules return (and receive) during the forward passes inside the block.

    Args:
        outputs: modules whose return value is recorded, under their hook names (or a dict
            ``name -> module`` naming them).
        inputs: modules whose arguments are recorded, under their hook name + :data:`INPUT`,
            as a dict ``parameter name -> value`` (see :func:`_arguments`).

    Yields:
        dict ``name -> `` tensor (or tuple, or dict of arguments), detached. A module called
        several times in the block (one forward pass per generation step, say) keeps its last
        value; use one block per pass.
    """
    record_id = next(_record_ids)
    store: dict[str, Any] = {}
    handles = []
    named = outputs.items() if isinstance(outputs, dict) else (
        (hook_name(module), module) for module in outputs)

    def on_output(name: str):
        def hook(_module, _args, output):
            if record_id in _ACTIVE_RECORDS.get():
                store[name] = _detach(output)

        return hook

    def on_input(name: str):
        def hook(module, args, kwargs):
            if record_id in _ACTIVE_RECORDS.get():
                store[name] = _detach(_arguments(module, args, kwargs))

        return hook

    token = _ACTIVE_RECORDS.set(_ACTIVE_RECORDS.get() | {record_id})
    try:
        for name, module in named:
            handles.append(module.register_forward_hook(on_output(name)))
        for module in inputs:
            handles.append(module.register_forward_pre_hook(
                on_input(hook_name(module) + INPUT), with_kwargs=True))
        yield store
    finally:
        for handle in handles:
            handle.remove()
        _ACTIVE_RECORDS.reset(token)


@contextmanager
def capture(
    model: nn.Module, names: Callable[[str], bool] | None = None
) -> Iterator[dict[str, torch.Tensor]]:
    """Record the output of hook points during the forward passes inside the block.

    Args:
        model: the module whose hook points are hooked.
        names: a filter on hook point names; ``None`` records every hook point.

    Yields:
        dict ``name -> tensor`` (detached), as :func:`record` does.
    """
    points = {name: point for name, point in _hook_points(model)
              if names is None or names(name)}
    with record(points) as store:
        yield store


@contextmanager
def intervene(model: nn.Module,
              changes: dict[str, Callable[[torch.Tensor], torch.Tensor]]) -> Iterator[None]:
    """Replace what hook points return during the forward passes inside the block, in this
    thread only (other sessions running the same shared model are untouched).

    Args:
        model: the module whose hook points are changed.
        changes: ``hook name -> function`` of the point's output returning its replacement
            (a new tensor: the point's output itself is left as it is).

    Records opened inside the block (:func:`capture`, a trace) see the changed values: the
    intervention's hooks are registered first.

    Raises:
        KeyError: a name that is no hook point of ``model`` (the names it has are listed).
    """
    points = dict(_hook_points(model))
    unknown = sorted(set(changes) - set(points))
    if unknown:
        raise KeyError(f"no hook point {unknown} in the model; it has {sorted(points)}")
    record_id = next(_record_ids)
    handles = []

    def changed(function):
        def hook(_module, _args, output):
            if record_id in _ACTIVE_RECORDS.get():
                return function(output)
            return None

        return hook

    token = _ACTIVE_RECORDS.set(_ACTIVE_RECORDS.get() | {record_id})
    try:
        for name, function in changes.items():
            handles.append(points[name].register_forward_hook(changed(function)))
        yield
    finally:
        for handle in handles:
            handle.remove()
        _ACTIVE_RECORDS.reset(token)
