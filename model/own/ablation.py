"""Interventions on the own models' attention (issue 26's "What moves" and head ablation), through
their hook points (:func:`model.own.hooks.intervene`), in the thread that asks only.

- :func:`heads_ablated`: a block inside which chosen heads of one attention module give nothing
  (their ``hook_z``, weights · V, is zero: the module's output keeps only W_O's bias from them);
- :func:`value_zeroed`: a block inside which one key's value vector is zero (in every head, or
  in one);
- :func:`layer_output`: what one layer gives, any intervention open applying (value zeroing,
  Mohebbi et al. 2023, compares it with and without each key's value:
  :func:`model.own.moves.layer_outputs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from model.own.hooks import hook_name, intervene, record
from model.own.transformer import attention_hook_name


def _zero(index: tuple):
    def change(output: torch.Tensor) -> torch.Tensor:
        changed = output.clone()
        changed[index] = 0
        return changed

    return change


def _heads(network: torch.nn.Module, kind: str, layer: int) -> int:
    stack, attribute = kind.split(".")[0], "self_attn" if kind.endswith("self") else "cross_attn"
    layers = getattr(network, stack).layers
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer {layer} is not in 0..{len(layers) - 1}")
    return getattr(layers[layer], attribute).n_heads


def _checked_heads(network, kind: str, layer: int, heads: Sequence[int] | None) -> list[int]:
    count = _heads(network, kind, layer)
    chosen = list(range(count)) if heads is None else [int(h) for h in heads]
    bad = [h for h in chosen if not 0 <= h < count]
    if bad or not chosen:
        raise ValueError(f"heads {bad or chosen} are not among the layer's 0..{count - 1}")
    return chosen


@contextmanager
def heads_ablated(network: torch.nn.Module, kind: str, layer: int,
                  heads: Sequence[int] | None = None) -> Iterator[list[int]]:
    """Inside the block, ``heads`` (None: every head) of ``kind``'s attention in ``layer`` add
    nothing to its output.

    Raises:
        ValueError: a layer or head the model does not have.
    """
    chosen = _checked_heads(network, kind, layer, heads)
    with intervene(network, {attention_hook_name(kind, layer, "hook_z"):
                             _zero((slice(None), chosen))}):
        yield chosen


@contextmanager
def value_zeroed(network: torch.nn.Module, kind: str, layer: int, key: int,
                 heads: Sequence[int] | None = None) -> Iterator[None]:
    """Inside the block, key ``key``'s value vector is zero in ``heads`` (None: every head) of
    ``kind``'s attention in ``layer``, in whole passes only.

    Raises:
        ValueError: (in the pass) a pass holding fewer values, or a cached decoding step.
    """
    chosen = _checked_heads(network, kind, layer, heads)
    zero = _zero((slice(None), chosen, int(key)))

    def change(values: torch.Tensor) -> torch.Tensor:
        # a pass with a KV cache projects the newest tokens only: position ``key`` would name
        # another token (or none), so only whole passes (traces, teacher forcing) are changed
        if values.shape[2] <= int(key) or (kind == "decoder.self" and values.shape[2] == 1):
            raise ValueError(f"key {key} is not in this pass's {values.shape[2]} values: value "
                             "zeroing needs a whole pass, not a cached decoding step")
        return zero(values)

    with intervene(network, {attention_hook_name(kind, layer, "hook_v"): change}):
        yield


def layer_output(model, text: str, target: str | None, kind: str, layer: int) -> torch.Tensor:
    """``[query, d_model]`` what ``layer`` of ``kind``'s stack gives (after its FFN's Add &
    Norm) when ``model`` (an own model) traces ``text`` (and ``target``): any intervention open
    in this thread applies."""
    module = getattr(model.network, kind.split(".")[0]).layers[layer]
    with record([module]) as store:
        model.trace(text, target)
    return store[hook_name(module)][0].double()
