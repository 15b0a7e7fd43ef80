"""``own-translator``: the own encoder-decoder trained on the synthetic English→Chinese corpus.

Greedy decoding writes one word at a time (seed 3.4 step 3). ``trace`` (inherited from
:class:`~model.own.adapter.OwnModel`) holds the source, the full target (``<bos>`` and the words
written) and the attention of every step: the decoder is causal, so row t of the final pass is
exactly what step t saw (a test checks this against step-by-step decoding). ``steps`` holds
each step's next-token distribution (a :class:`~model.meta.Step`).

Both decode with the decoder's KV cache, as a served model does (:func:`model.own.decoding.greedy`,
the one loop): each step projects only the newest token to keys and values and appends them to
every decoder layer's cache, while the cross-attention keys and values are projected once from
the encoder's output. ``generate`` also measures the cache at every step.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from i18n import _
from model.device import resolve_device, resolve_dtype
from model.interface import Generation
from model.meta import Step
from model.own.adapter import OwnModel, _encode
from model.own.config import TransformerConfig
from model.own.decoding import greedy, steps_from_logits
from model.own.transformer import Transformer
from model.own.vocab import SPECIALS, WordVocab, split_words
from model.text import check_text

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
WEIGHTS = WEIGHTS_DIR / "own-translator.safetensors"
CARD = WEIGHTS_DIR / "own-translator.json"


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
                   device: str = "auto", stage: int | None = None,
                   dtype: str = "auto") -> Translator:
        """Load the committed weights (safetensors) and their card (config, vocabularies);
        ``stage``: the weights of the recorded training run after that many steps instead
        (see :func:`training_stages`), named ``own-translator@step{stage}``; ``dtype``: the
        precision it runs in (see :func:`~model.device.resolve_dtype`)."""
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
        device_t = resolve_device(device)
        network = network.to(resolve_dtype(dtype, device_t))
        return cls(name, network, device_t,
                   WordVocab(info["src_vocab"][4:]), WordVocab(info["tgt_vocab"][4:]))

    def _default_target_words(self, n_source: int) -> int:
        """Greedy decoding writes at most ``2 n + 10`` words (see :meth:`translate_ids`)."""
        return 2 * n_source + 10

    @torch.inference_mode()
    def translate_ids(self, src_ids: list[list[int]],
                      max_len: int | None = None) -> list[list[int]]:
        """Greedy-decode a batch of source id lists (at most ``max_len`` steps, default
        ``2 n + 10`` for the longest source's ``n``); returns target ids without bos/eos."""
        pad = self.config.pad_id
        width = max(len(s) for s in src_ids)
        src = torch.full((len(src_ids), width), pad, dtype=torch.long)
        for row, ids in enumerate(src_ids):
            src[row, :len(ids)] = torch.tensor(ids)
        src = src.to(self.device)  # [batch, source]
        memory, src_mask = self.network.encode(src)
        max_len = max_len or 2 * width + 10
        bos, eos = self.tgt_vocab.bos_id, self.tgt_vocab.eos_id
        prompt = torch.full((len(src_ids), 1), bos, dtype=torch.long, device=self.device)
        written = [next_id for _logits, next_id, _cache in
                   greedy(self.network, prompt, [eos], max_len, memory, src_mask)]
        results = []
        for row in torch.stack(written, dim=1).tolist():  # [batch, step]
            results.append(row[:row.index(eos)] if eos in row else [i for i in row if i != pad])
        return results

    def english_words(self) -> list[str]:
        """The words the translator reads, sorted (its source vocabulary without specials)."""
        return self.src_vocab.words()

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
        written = [*tokens["target_ids"][1:], self.tgt_vocab.eos_id]
        return steps_from_logits(logits, written, self.tgt_vocab.itos)  # logits [target, vocab]

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
        src = torch.tensor([src_ids], device=self.device)  # [batch, source]
        memory, src_mask = self.network.encode(src)  # [batch, source, d_model]
        prompt = torch.tensor([[self.tgt_vocab.bos_id]], device=self.device)  # [batch, 1]
        specials = [self.tgt_vocab.stoi[token] for token in SPECIALS]
        limit = max_new_tokens or self._default_target_words(len(src_ids))
        logits, ids, sizes, cached = [], [], [], []
        for step_logits, next_id, cache in greedy(self.network, prompt, specials, limit,
                                                  memory, src_mask):
            logits.append(step_logits[0])  # [vocab]
            ids.append(int(next_id[0]))
            sizes.append(cache.self_attn.nbytes())  # per layer, after this step's token
            cached.append(cache.self_attn.tokens)
        steps = steps_from_logits(torch.stack(logits), ids, self.tgt_vocab.itos)
        written = [step.token for step in steps[:-1]]  # the words fed back in
        trace = self.trace(text, target=" ".join(written))
        return Generation(model=self.name, prompt_tokens=tuple(words), steps=tuple(steps),
                          cached_tokens=np.array(cached), self_cache_bytes=np.array(sizes),
                          cross_cache_bytes=np.array(cache.cross_attn.nbytes()),
                          bytes_per_element=cache.self_attn.keys[0].element_size(), trace=trace)
