"""The own network re-run with hooks, shared by the lessons that look inside one layer
(:mod:`.architecture`, :mod:`.qkv`, :mod:`.multihead`).

:func:`run` makes one forward pass of the project's own Transformer
(:mod:`model.own.transformer`) on the ids a trace ran on and records the modules it is given
with :func:`model.own.hooks.record`, the one recorder of the own models: names are the hook
names set when the network was built (listed, with their shapes, in
:mod:`model.own.transformer`). Nothing here recomputes the model. Hooks record only in the
thread that opened them, so sessions sharing a model never see each other's tensors.

Also here: the checks of a layer, head and attention kind the lessons share, and the names of a
trace's tokens and query rows.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

from i18n import _
from model.analysis.cuts import query_rows
from model.meta import Family
from model.own.hooks import record
from model.own.transformer import ATTENTION_MODULES, Transformer
from model.trace import AttentionTrace


def own_network(loaded) -> Transformer:
    """The torch :class:`~model.own.transformer.Transformer` of an own model.

    Raises:
        ValueError: ``loaded`` is not one of the project's own models.
    """
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


def run(loaded, trace: AttentionTrace, outputs: Iterable[nn.Module] = (),
        inputs: Iterable[nn.Module] = ()) -> tuple[dict, torch.Tensor]:
    """One forward pass of the own network on the trace's ids, recording what ``outputs``
    return and what ``inputs`` receive (:func:`model.own.hooks.record`: keys are hook names,
    inputs under ``name + ".input"`` by parameter name).

    Returns:
        the records and the logits ``[position, vocab]``.
    """
    network = own_network(loaded)
    with torch.inference_mode(), record(outputs, inputs) as store:
        logits = network(**model_inputs(loaded, trace))[0]
    return store, logits


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A recorded tensor as float64 numpy."""
    return tensor.detach().to("cpu", torch.float64).numpy()


def layer_module(network: nn.Module, stack: str, layer: int) -> nn.Module:
    """Layer ``layer`` of ``stack``; an index out of range raises ValueError."""
    block = getattr(network, stack, None)
    if block is None:
        raise ValueError(_("this model has no {stack}").format(stack=stack))
    n_layers = len(block.layers)
    if not 0 <= int(layer) < n_layers:
        raise ValueError(_("layer {layer} is out of range: the {stack} has {count} layers")
                         .format(layer=layer, stack=stack, count=n_layers))
    return block.layers[int(layer)]


def check_head(network: nn.Module, head: int) -> int:
    """``head`` as an int; out of range raises ValueError."""
    n_heads = network.cfg.n_heads
    if not 0 <= int(head) < n_heads:
        raise ValueError(_("head {head} is out of range: the model has {count} heads").format(
            head=head, count=n_heads))
    return int(head)


def attention_module(network: nn.Module, name: str, layer: int) -> nn.Module:
    """The attention module of kind ``name`` in ``layer``
    (:data:`~model.own.transformer.ATTENTION_MODULES`); an unknown kind, a missing module or
    a layer out of range raises ValueError."""
    if name not in ATTENTION_MODULES:
        raise ValueError(_("{name} is not an attention kind of the own model").format(
            name=name))
    stack, attribute = ATTENTION_MODULES[name]
    module = getattr(layer_module(network, stack, layer), attribute, None)
    if module is None:
        raise ValueError(_("this model has no {name}").format(name=name))
    return module


def allowed(mask: torch.Tensor | None, n_q: int, n_k: int) -> np.ndarray:
    """The mask an attention module received, broadcast to ``[query, key]`` (True = may
    attend)."""
    if mask is None:
        return np.ones((n_q, n_k), dtype=bool)
    full = torch.broadcast_to(mask[0, 0].bool(), (n_q, n_k))  # [query, key]
    return full.cpu().numpy().copy()


def stack_tokens(trace: AttentionTrace, stack: str) -> list[str]:
    """The tokens a stack reads (the source for the encoder, the target for the decoder)."""
    return [str(t) for t in trace.axes(f"{stack}.self")[0]]


def query_choices(trace: AttentionTrace, name: str) -> list[str]:
    """How a query position is named in a menu: ``"2: sat"``, or for the decoder the word the
    row writes (``"3: writes 垫子 (reads 在)"``)."""
    return query_rows(trace, name).hover
