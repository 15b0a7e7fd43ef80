"""Hook points and the capture context manager (TransformerLens style).

A :class:`HookPoint` is an identity module placed after a computation whose value we want to see
(attention scores, attention patterns). :func:`capture` registers forward hooks on the hook
points of a model, yields a dict that fills up during the forward pass, and removes every hook
in ``finally``, also when the forward pass raises.

A model object may be shared by several threads (Streamlit sessions). Hooks live on the shared
modules, so each hook records only when the thread running the forward pass is the one that
opened the capture (a context variable carries the capture's identity).
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

_ACTIVE_CAPTURE: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "attention_explorer_capture", default=None
)
_capture_ids = itertools.count(1)


class HookPoint(nn.Identity):
    """An identity module: a named place where a forward hook can read an intermediate value."""


def hook_point_names(model: nn.Module) -> list[str]:
    """Names of every :class:`HookPoint` in ``model``, in module order."""
    return [name for name, module in model.named_modules() if isinstance(module, HookPoint)]


@contextmanager
def capture(
    model: nn.Module, names: Callable[[str], bool] | None = None
) -> Iterator[dict[str, torch.Tensor]]:
    """Record the output of hook points during the forward passes inside the block.

    Args:
        model: the module whose hook points are hooked.
        names: a filter on hook point names; ``None`` records every hook point.

    Yields:
        dict ``name -> tensor`` (detached). A hook point called several times in the block (one
        forward pass per generation step, say) keeps its last value; use one block per pass.
    """
    capture_id = next(_capture_ids)
    store: dict[str, torch.Tensor] = {}
    handles = []

    def make_hook(name: str):
        def hook(_module, _inputs, output):
            if _ACTIVE_CAPTURE.get() == capture_id:
                store[name] = output.detach()

        return hook

    token = _ACTIVE_CAPTURE.set(capture_id)
    try:
        for name, module in model.named_modules():
            if isinstance(module, HookPoint) and (names is None or names(name)):
                handles.append(module.register_forward_hook(make_hook(name)))
        yield store
    finally:
        for handle in handles:
            handle.remove()
        _ACTIVE_CAPTURE.reset(token)
