"""Greedy decoding of the own Transformer with its KV cache, and the steps it records.

:func:`greedy` is the one decoding loop (``own-translator``'s ``translate_ids`` and ``generate``
use it): the first pass feeds the prompt (``<bos>``), each later pass only the token written
last, and the decoder's :class:`~model.own.transformer.DecoderCache` keeps every earlier
token's keys and values, so a pass equals the last row of the full pass over every token (a
test checks this at every step). :func:`steps_from_logits` turns next-token logits into the
:class:`~model.meta.Step` records of a trace or a generation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import torch

from model.meta import TOP_K, Step
from model.own.transformer import DecoderCache, Transformer


def greedy(network: Transformer, prompt: torch.Tensor, stop_ids: Iterable[int],
           max_new_tokens: int, memory: torch.Tensor | None = None,
           src_mask: torch.Tensor | None = None,
           ) -> Iterator[tuple[torch.Tensor, torch.Tensor, DecoderCache]]:
    """Write the most probable token, one step at a time, with the decoder's KV cache.

    Args:
        network: the Transformer (decoder-only, or encoder-decoder with ``memory``).
        prompt: ``[batch, P]`` the tokens the first pass reads (``<bos>``).
        stop_ids: a sequence is done once it writes one of these; a done sequence writes
            padding from then on, and decoding ends when every sequence is done.
        max_new_tokens: the most steps.
        memory, src_mask: the encoder's output and its padding mask (encoder-decoder).

    Yields:
        per step, ``(logits [batch, vocab], the ids written [batch], the cache)``; the cache
        then holds every token fed so far (the prompt and the ids written before this step).
    """
    cache = DecoderCache()
    stop = torch.tensor(sorted(set(stop_ids)), dtype=torch.long, device=prompt.device)
    done = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
    tokens = prompt
    for _step in range(max_new_tokens):
        hidden = network.decode(tokens, memory, src_mask, cache=cache)  # [batch, new, d_model]
        logits = network.generator(hidden[:, -1])  # [batch, vocab]
        next_id = logits.argmax(-1).masked_fill(done, network.cfg.pad_id)  # [batch]
        yield logits, next_id, cache
        done |= torch.isin(next_id, stop)
        if done.all():
            return
        tokens = next_id[:, None]  # [batch, 1]


def steps_from_logits(logits: torch.Tensor, written: Sequence[int],
                      itos: Sequence[str]) -> tuple[Step, ...]:
    """Step t: the distribution (softmax of ``logits[t]``, ``[steps, vocab]``) token
    ``written[t]`` was chosen from, its probability and the ``TOP_K`` most probable tokens."""
    probs = torch.softmax(logits.float(), dim=-1)  # [step, vocab]
    top = probs.topk(min(TOP_K, probs.size(-1)), dim=-1)
    return tuple(
        Step(step=t, token=itos[token_id], probability=float(probs[t, token_id]),
             top_k=tuple((itos[i], float(p))
                         for p, i in zip(top.values[t].tolist(), top.indices[t].tolist())))
        for t, token_id in enumerate(written))
