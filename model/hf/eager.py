"""The second route: attention weights from a model's own eager ``output_attentions``.

Some transformers models compute attention in their own modules instead of through the attention
interface that :mod:`.capture` records (bloom, falcon, gpt_neo, deberta, roformer, mpnet, ...).
Their weights are taken from the model itself: it runs in eager mode with
``output_attentions=True`` and returns every layer's ``[batch, head, query, key]`` weights. That
keeps every weight of every layer in memory at once (:func:`model.budget.dense_bytes` counts it),
where the recorded route keeps queries and keys; it is exact by construction.

:func:`eager_weights` runs the pass and checks that what came back is one token-to-token map per
layer, so that a model whose attention is not of that form (block-local maps, pooled tokens) is
refused with the reason instead of shown wrongly.
"""

from __future__ import annotations

import numpy as np
import torch

from i18n import _
from model.errors import ModelLoadError
from model.meta import Family

# transformers' output fields, per kind of a trace
FIELDS = {Family.ENCODER_ONLY: {"encoder.self": "attentions"},
          Family.DECODER_ONLY: {"decoder.self": "attentions"},
          Family.ENCODER_DECODER: {"encoder.self": "encoder_attentions",
                                   "decoder.self": "decoder_attentions",
                                   "decoder.cross": "cross_attentions"}}


# Models whose (encoder) self-attention returns a band: for each query, the weights of the
# ``window + 1`` keys centred on it (Longformer's sliding window; LED's encoder is Longformer's).
BANDED = {"longformer": "attentions", "led": "encoder_attentions"}


def unband(band: torch.Tensor, n_keys: int) -> torch.Tensor:
    """A band ``[batch, head, query, window + 1]`` (column ``window / 2`` is the query itself)
    as the full ``[batch, head, query, key]`` map, zero outside the band."""
    n_queries, width = band.shape[2], band.shape[3]
    query = torch.arange(n_queries, device=band.device)[:, None]
    key = query - (width - 1) // 2 + torch.arange(width, device=band.device)[None]
    inside = (key >= 0) & (key < n_keys)
    full = band.new_zeros((*band.shape[:2], n_queries, n_keys))
    index = key.clamp(0, n_keys - 1).expand(*band.shape[:2], -1, -1)
    return full.scatter_add_(-1, index, band * inside)


# Models whose encoder attends within blocks: each block of L queries to the keys of the blocks
# before it, itself and after it, returned as ``[batch, block, head, L, 3 L]`` (LongT5's local
# attention; its transient-global attention adds columns that are not tokens, and is refused).
BLOCKED = {"longt5": "encoder_attentions"}


def unblock(blocks: torch.Tensor, n_keys: int) -> torch.Tensor:
    """Local attention in blocks ``[batch, block, head, L, 3 L]`` as the full ``[batch, head,
    query, key]`` map of the first ``n_keys`` queries and keys, zero outside the three blocks."""
    batch, n_blocks, heads, length, width = blocks.shape
    rows = blocks.permute(0, 2, 1, 3, 4).reshape(batch, heads, n_blocks * length, width)
    query = torch.arange(n_blocks * length, device=blocks.device)[:, None]
    key = query - query % length - length + torch.arange(width, device=blocks.device)[None]
    inside = (key >= 0) & (key < n_keys)
    full = rows.new_zeros((batch, heads, n_blocks * length, n_keys))
    index = key.clamp(0, n_keys - 1).expand(batch, heads, -1, -1)
    return full.scatter_add_(-1, index, rows * inside)[:, :, :n_keys]


def eager_weights(model: torch.nn.Module, family: Family, inputs: dict,
                  layers: dict[str, int] | None, some: bool = False) -> dict[str, np.ndarray]:
    """Run ``model`` (in eager mode) on ``inputs`` and return each kind's weights, float32
    ``[layer, batch, head, query, key]``, read-only.

    Args:
        layers: how many layers each kind has (from the config); None: any number.
        some: fewer maps than ``layers`` are accepted too (a hybrid model's attention layers).

    Raises:
        ModelLoadError: the model returned no weights for a kind, a different number of layers,
            or maps that are not one weight per query and key token.
    """
    extra = {"logits_to_keep": 1} if family is Family.DECODER_ONLY else {}
    with torch.inference_mode():
        out = model(**inputs, output_attentions=True, use_cache=False, return_dict=True, **extra)
    n_source = inputs["input_ids"].shape[1]
    n_target = inputs["decoder_input_ids"].shape[1] if "decoder_input_ids" in inputs else 0
    lengths = {"encoder.self": (n_source, n_source), "decoder.cross": (n_target, n_source),
               "decoder.self": (n_target, n_target) if n_target else (n_source, n_source)}
    weights = {}
    banded = BANDED.get(getattr(model.config, "model_type", ""))
    blocked = BLOCKED.get(getattr(model.config, "model_type", ""))
    for kind, field in FIELDS[family].items():
        maps = getattr(out, field, None)
        if not maps or any(m is None for m in maps):
            raise ModelLoadError(_("its {kind} attention returns no weights "
                                   "(output_attentions)").format(kind=kind))
        if field == banded:
            maps = [unband(m, lengths[kind][1]) for m in maps]
        if field == blocked and all(m.ndim == 5 and m.shape[-1] == 3 * m.shape[-2] for m in maps):
            maps = [unblock(m, lengths[kind][1]) for m in maps]
        if layers is not None and not (len(maps) == layers[kind] or some and
                                       0 < len(maps) < layers[kind]):
            raise ModelLoadError(_("its {kind} attention returns {got} maps for {layers} layers: "
                                   "some layers are not attention").format(
                kind=kind, got=len(maps), layers=layers[kind]))
        expected = lengths[kind]
        for m in maps:
            if not isinstance(m, torch.Tensor):
                raise ModelLoadError(_("its {kind} attention returns {what} instead of one map of "
                                       "weights per layer (local and global parts)").format(
                    kind=kind, what=type(m).__name__))
            if m.ndim != 4 or tuple(m.shape[2:]) != expected:
                raise ModelLoadError(_("its {kind} attention returns maps of shape {shape}, not "
                                       "one weight per query and key token ({queries} × {keys}): "
                                       "it attends within blocks, to pooled or extra positions, "
                                       "or approximates the weights").format(
                    kind=kind, shape=tuple(m.shape), queries=expected[0], keys=expected[1]))
        if len({m.shape[1] for m in maps}) > 1:
            raise ModelLoadError(_("its {kind} layers have different numbers of heads: "
                                   "{counts}").format(kind=kind,
                                                      counts=sorted({m.shape[1] for m in maps})))
        array = torch.stack([m.detach().float() for m in maps]).cpu().numpy()
        array.setflags(write=False)
        weights[kind] = array
    return weights
