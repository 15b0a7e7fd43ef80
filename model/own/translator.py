"""``own-translator``: the own encoder-decoder trained on the synthetic English→Chinese corpus.

Greedy decoding writes one word at a time (seed 3.4 step 3). ``trace`` (inherited from
:class:`~model.own.adapter.OwnModel`) holds the source, the full target (``<bos>`` and the words
written) and the attention of every step: the decoder is causal, so row t of the final pass is
exactly what step t saw (a test checks this against step-by-step decoding). ``steps`` holds
each step's next-token distribution (a :class:`~model.facts.Step`).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from i18n import _

from ..device import resolve_device
from ..facts import Step
from .adapter import OwnModel
from .config import TransformerConfig
from .transformer import Transformer
from .vocab import SPECIALS, WordVocab, split_words

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
WEIGHTS = WEIGHTS_DIR / "own-translator.safetensors"
CARD = WEIGHTS_DIR / "own-translator.json"
TOP_K = 5


class Translator(OwnModel):
    """The own encoder-decoder with fixed English and Chinese vocabularies."""

    @classmethod
    def from_files(cls, weights: Path = WEIGHTS, card: Path = CARD,
                   device: str = "auto") -> Translator:
        """Load the committed weights (safetensors) and their card (config, vocabularies)."""
        if not weights.exists() or not card.exists():
            raise ValueError(_("own-translator weights are missing ({file}); train them with "
                               "`python -m model.own.train`").format(file=weights))
        info = json.loads(card.read_text(encoding="utf-8"))
        cfg = TransformerConfig(**info["config"])
        network = Transformer(cfg)
        network.load_state_dict(load_file(str(weights)))
        return cls("own-translator", network, resolve_device(device),
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
