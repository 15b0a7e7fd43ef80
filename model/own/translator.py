"""``own-translator``: the own encoder-decoder trained on the synthetic English→Chinese corpus.

Greedy decoding writes one word at a time (seed 3.4 step 3). ``trace`` (inherited from
:class:`~model.own.adapter.OwnModel`) holds the source, the full target (``<bos>`` and the words
written) and the attention of every step: the decoder is causal, so row t of the final pass is
exactly what step t saw (a test checks this against step-by-step decoding). ``steps`` holds
each step's next-token distribution (a :class:`~model.meta.Step`).

``generate`` decodes the same way with a KV cache, as a served model does: each step projects
only the newest token to keys and values and appends them to every decoder layer's cache, while
the cross-attention keys and values are projected once from the encoder's output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from i18n import _
from model.device import resolve_device
from model.interface import Generation
from model.meta import Step
from model.own.adapter import OwnModel, _encode
from model.own.config import TransformerConfig
from model.own.position_encoding import rope_rotate
from model.own.transformer import MultiHeadAttention, Transformer, attention
from model.own.vocab import SPECIALS, WordVocab, split_words
from model.text import check_text

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
WEIGHTS = WEIGHTS_DIR / "own-translator.safetensors"
CARD = WEIGHTS_DIR / "own-translator.json"
TOP_K = 5


STAGES_DIR = WEIGHTS_DIR / "stages"


def stage_path(step: int, folder: Path = STAGES_DIR) -> Path:
    """Where the weights after ``step`` optimiser steps of a recorded training run are kept
    (float16)."""
    return folder / f"step{step}.safetensors"


def training_stages(folder: Path = STAGES_DIR) -> list[int]:
    """The steps of the recorded training run whose weights are kept, ``[0, ..., N]`` (empty
    when none are)."""
    card = folder / "stages.json"
    if not card.exists():
        return []
    steps = json.loads(card.read_text(encoding="utf-8"))["steps"]
    return [s for s in steps if stage_path(s, folder).exists()]


class Translator(OwnModel):
    """The own encoder-decoder with fixed English and Chinese vocabularies."""

    @classmethod
    def from_files(cls, weights: Path = WEIGHTS, card: Path = CARD,
                   device: str = "auto", stage: int | None = None) -> Translator:
        """Load the committed weights (safetensors) and their card (config, vocabularies);
        ``stage``: the weights of the recorded training run after that many steps instead
        (see :func:`training_stages`), named ``own-translator@step{stage}``."""
        name = "own-translator"
        info = json.loads(card.read_text(encoding="utf-8")) if card.exists() else None
        if stage is not None:
            weights, name = stage_path(stage), f"own-translator@step{stage}"
        if not weights.exists() or info is None:
            raise ValueError(_("own-translator weights are missing ({file}); train them with "
                               "`python -m model.own.train`").format(file=weights))
        cfg = TransformerConfig(**info["config"])
        network = Transformer(cfg)
        network.load_state_dict(load_file(str(weights)))  # float16 stages become float32
        return cls(name, network, resolve_device(device),
                   WordVocab(info["src_vocab"][4:]), WordVocab(info["tgt_vocab"][4:]))

    def _default_target_words(self, n_source: int) -> int:
        """Greedy decoding writes at most ``2 n + 10`` words (see :meth:`translate_ids`)."""
        return 2 * n_source + 10

    @torch.inference_mode()
    def translate_ids(self, src_ids: list[list[int]],
                      max_len: int | None = None) -> list[list[int]]:
        """Greedy-decode a batch of source id lists; returns target ids without bos/eos."""
        pad = self.config.pad_id
        width = max(len(s) for s in src_ids)
        src = torch.full((len(src_ids), width), pad, dtype=torch.long)
        for row, ids in enumerate(src_ids):
            src[row, :len(ids)] = torch.tensor(ids)
        src = src.to(self.device)  # [batch, source]
        memory, src_mask = self.network.encode(src)
        max_len = max_len or 2 * width + 10
        bos, eos = self.tgt_vocab.bos_id, self.tgt_vocab.eos_id
        out = torch.full((len(src_ids), 1), bos, dtype=torch.long, device=self.device)
        done = torch.zeros(len(src_ids), dtype=torch.bool, device=self.device)
        for _step in range(max_len):
            logits = self.network.generator(self.network.decode(out, memory, src_mask)[:, -1])
            next_id = logits.argmax(-1).masked_fill(done, pad)  # [batch]
            out = torch.cat([out, next_id[:, None]], dim=1)
            done |= next_id == eos
            if done.all():
                break
        results = []
        for row in out[:, 1:].tolist():
            results.append(row[:row.index(eos)] if eos in row else [i for i in row if i != pad])
        return results

    def english_words(self) -> list[str]:
        """The words the translator reads, sorted (its source vocabulary without specials)."""
        return sorted(w for w in self.src_vocab.itos if w not in SPECIALS)

    def translate(self, text: str) -> str:
        """Greedy translation of ``text`` (Chinese words separated by spaces)."""
        ids = self.src_vocab.encode(split_words(text))
        return " ".join(self.tgt_vocab.decode(self.translate_ids([ids])[0]))

    def _own_target(self, words: list[str], src_ids: list[int]) -> list[str]:
        """Without a target, the trace follows the greedy translation."""
        return self.tgt_vocab.decode(self.translate_ids([src_ids])[0])

    def _steps(self, logits: torch.Tensor, tokens: dict) -> tuple[Step, ...]:
        """Step t: the distribution word t + 1 (or ``<eos>``) was chosen from, with its top 5.

        The decoder is causal, so row t of this one pass is exactly what step t of greedy
        decoding computed.
        """
        probs = torch.softmax(logits.float(), dim=-1)  # [target, vocab]
        top = probs.topk(TOP_K, dim=-1)
        written = [*tokens["target_ids"][1:], self.tgt_vocab.eos_id]
        return tuple(
            Step(step=t, token=self.tgt_vocab.itos[token_id],
                 probability=float(probs[t, token_id]),
                 top_k=tuple((self.tgt_vocab.itos[i], float(p))
                             for p, i in zip(top.values[t].tolist(), top.indices[t].tolist())))
            for t, token_id in enumerate(written))

    @torch.inference_mode()
    def generate(self, text: str, max_new_tokens: int | None = None) -> Generation:
        """Greedy translation of ``text`` with a KV cache, measured after every step.

        Step t feeds one token (``<bos>``, then the word written at step t − 1) through the
        decoder: each layer's self-attention projects it to one key and one value per head and
        appends them to that layer's cache, so its query reads every cached key without the
        earlier tokens being computed again; cross-attention reads keys and values projected
        once from the encoder's output. Writing stops at ``<eos>`` (or any special token) or
        after ``max_new_tokens`` tokens (default ``2 n + 10`` for ``n`` source words, as
        :meth:`translate_ids`).

        Returns:
            a :class:`~model.interface.Generation` whose cache sizes are the bytes of the
            cache tensors, and whose trace is the teacher-forced pass over ``<bos>`` and the
            words written (its rows are what the steps computed: the decoder is causal).

        Raises:
            ValueError: the text holds no words or words outside the vocabulary.
        """
        check_text(text)
        words = split_words(text)
        if not words:
            raise ValueError(_("the text holds no words"))
        src_ids = _encode(self.src_vocab, words, "source")
        net = self.network
        src = torch.tensor([src_ids], device=self.device)  # [batch, source]
        memory, src_mask = net.encode(src)  # [batch, source, d_model]
        layers = list(net.decoder.layers)
        # Cross-attention keys and values: once, from the encoder's output.
        cross = [(_heads(layer.cross_attn, layer.cross_attn.W_K(memory)),  # [b, h, src, d]
                  _heads(layer.cross_attn, layer.cross_attn.W_V(memory)))
                 for layer in layers]
        cross_bytes = [_nbytes(k) + _nbytes(v) for k, v in cross]
        cache: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(layers)
        limit = max_new_tokens or self._default_target_words(len(src_ids))
        token, steps, sizes, cached = self.tgt_vocab.bos_id, [], [], []
        for t in range(limit):
            x = self._embed_at(token, t)  # [batch, 1, d_model]
            for i, layer in enumerate(layers):
                x, cache[i] = _cached_layer(layer, x, cache[i], t, cross[i], src_mask)
            probs = torch.softmax(net.generator(x[:, -1]).float(), dim=-1)[0]  # [vocab]
            token = int(probs.argmax())
            top = probs.topk(min(TOP_K, probs.numel()))
            steps.append(Step(step=t, token=self.tgt_vocab.itos[token],
                              probability=float(probs[token]),
                              top_k=tuple((self.tgt_vocab.itos[j], float(p)) for p, j in
                                          zip(top.values.tolist(), top.indices.tolist()))))
            sizes.append([_nbytes(k) + _nbytes(v) for k, v in cache])
            cached.append(cache[0][0].shape[2])
            if self.tgt_vocab.itos[token] in SPECIALS:
                break
        written = [step.token for step in steps[:-1]]  # the words fed back in
        trace = self.trace(text, target=" ".join(written))
        return Generation(model=self.name, prompt_tokens=tuple(words), steps=tuple(steps),
                          cached_tokens=np.array(cached), self_cache_bytes=np.array(sizes),
                          cross_cache_bytes=np.array(cross_bytes),
                          bytes_per_element=cache[0][0].element_size(), trace=trace)

    def _embed_at(self, token: int, position: int) -> torch.Tensor:
        """The decoder's input for one token at ``position``: its embedding × √d_model plus the
        sinusoidal row of that position (as :class:`~model.own.transformer.Embeddings`)."""
        embed = self.network.tgt_embed
        if position >= embed.max_len:
            raise ValueError(_("sequence of {length} tokens is longer than max_len={max_len}")
                             .format(length=position + 1, max_len=embed.max_len))
        ids = torch.tensor([[token]], device=self.device)  # [batch, 1]
        x = embed.token(ids) * math.sqrt(embed.d_model)  # [batch, 1, d_model]
        if embed.pe is not None:
            x = x + embed.pe[position]
        return embed.dropout(x)


def _heads(attn: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """``[batch, pos, d_model] -> [batch, head, pos, d_head]``."""
    return attn.split_heads(x)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _attend(attn: MultiHeadAttention, x, keys, values, mask=None, position=None):
    """One query token ``x [batch, 1, d_model]`` against cached ``keys``/``values``
    ``[batch, head, key, d_head]``: the sublayer's output ``[batch, 1, d_model]``."""
    q = _heads(attn, attn.W_Q(x))  # [batch, head, 1, d_head]
    if position is not None and attn.rope_base is not None:
        q = rope_rotate(q, torch.tensor([position]), attn.rope_base)
    z, _weights = attention(q, keys, values, mask)  # [batch, head, 1, d_head]
    # [batch, head, 1, d_head] -> [batch, 1, d_model]
    return attn.W_O(z.transpose(1, 2).reshape(x.size(0), 1, attn.n_heads * attn.d_head))


def _cached_layer(layer, x, cache, position: int, cross, src_mask):
    """One decoder layer for the newest token at ``position``: its key and value appended to
    ``cache`` (``(keys, values)`` ``[batch, head, tokens, d_head]``, or None before step 1).

    Returns:
        ``(output [batch, 1, d_model], the grown cache)``.
    """
    attn = layer.self_attn
    k = _heads(attn, attn.W_K(x))  # [batch, head, 1, d_head]
    v = _heads(attn, attn.W_V(x))  # [batch, head, 1, d_head]
    if attn.rope_base is not None:
        k = rope_rotate(k, torch.tensor([position]), attn.rope_base)
    if cache is not None:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    # The newest token may read every cached key: no mask is needed.
    x = layer.residual_self(x, _attend(attn, x, k, v, position=position))
    if layer.cross_attn is not None:
        x = layer.residual_cross(x, _attend(layer.cross_attn, x, *cross, mask=src_mask))
    return layer.residual_ffn(x, layer.ffn(x)), (k, v)
