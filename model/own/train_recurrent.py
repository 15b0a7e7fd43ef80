"""Train the recurrent translators: ``python -m model.own.train_recurrent`` (see ``--help``).

``own-rnn`` and ``own-gru`` (the single vector) and ``own-bahdanau`` (additive attention) of
:mod:`model.own.recurrent`, on the same synthetic corpus, vocabulary and seed as
``own-translator`` (:mod:`model.own.training_pairs`), with the same batches in the same order:
Adam, gradient clipping, cross-entropy on every target word and ``<eos>``. No guided alignment:
Bahdanau's alignment is learnt from translating alone.

Reproducible bit for bit: one thread, a fixed seed, deterministic algorithms; a test retrains
each and compares every weight with the shipped files. Writes ``weights/<name>.safetensors`` and
a JSON card (config, vocabularies, training, held-out exact match by source length).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tqdm import tqdm

from model.own.recurrent import (
    MODELS,
    WEIGHTS_DIR,
    RecurrentConfig,
    RecurrentSeq2Seq,
    RecurrentTranslator,
    card_path,
    weights_path,
)
from model.own.training_pairs import make_corpus, vocabularies
from model.own.vocab import WordVocab, split_words

STEPS, BATCH, LR, CLIP = 3000, 64, 2e-3, 1.0
# Held-out sentences are grouped by their number of English words (upper bounds, inclusive).
LENGTH_BINS = (6, 8, 11, 14, 99)


def _batch(pairs, src_vocab: WordVocab, tgt_vocab: WordVocab):
    """Padded tensors: src [B, S], decoder input [B, T + 1] (<bos> + words), output [B, T + 1]."""
    src = [src_vocab.encode(split_words(p.en)) for p in pairs]
    tgt = [tgt_vocab.encode(split_words(p.zh)) for p in pairs]
    S, T = max(map(len, src)), max(map(len, tgt)) + 1
    src_t = torch.zeros(len(pairs), S, dtype=torch.long)
    dec_in = torch.zeros(len(pairs), T, dtype=torch.long)
    dec_out = torch.zeros(len(pairs), T, dtype=torch.long)
    for row, (s, t) in enumerate(zip(src, tgt)):
        src_t[row, :len(s)] = torch.tensor(s)
        dec_in[row, :len(t) + 1] = torch.tensor([tgt_vocab.bos_id, *t])
        dec_out[row, :len(t) + 1] = torch.tensor([*t, tgt_vocab.eos_id])
    return src_t, dec_in, dec_out


def kernels() -> str:
    """The processor and torch's kernels that training runs on here, as a card records them.

    Training is bit for bit the same only on the same kernels: MKL and oneDNN choose theirs by
    the processor (and torch by its vector instructions), so float sums round differently
    elsewhere and 3,000 Adam steps carry the difference on."""
    processor = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            processor = next((line.split(":", 1)[1].strip() for line in info
                              if line.startswith("model name")), processor)
    except OSError:
        pass
    return f"{processor} · {torch.backends.cpu.get_cpu_capability()} · torch {torch.__version__}"


def train_one(name: str, seed: int = 0, steps: int = STEPS, batch_size: int = BATCH,
              lr: float = LR, out_dir: Path = WEIGHTS_DIR, progress: bool = True) -> dict:
    """Train ``name`` (one of :data:`~model.own.recurrent.MODELS`) on the CPU in one thread,
    write its weights and card, and return the card."""
    if name not in MODELS:
        raise ValueError(f"name must be one of {MODELS}")
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        return _train(name, seed, steps, batch_size, lr, out_dir, progress)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _train(name, seed, steps, batch_size, lr, out_dir, progress) -> dict:
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    corpus = make_corpus(seed)
    en_words, zh_words = vocabularies(corpus.train + corpus.test)
    src_vocab, tgt_vocab = WordVocab(en_words), WordVocab(zh_words)
    cfg = RecurrentConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab),
                          attention=name == "own-bahdanau",
                          cell="rnn" if name == "own-rnn" else "gru")
    net = RecurrentSeq2Seq(cfg).train()
    optimiser = torch.optim.Adam(net.parameters(), lr=lr)
    order: list = []
    bar = tqdm(range(steps), desc=f"training {name}", disable=not progress, file=sys.stderr)
    for _step in bar:
        if len(order) < batch_size:
            order = list(corpus.train)
            rng.shuffle(order)
        batch, order = order[:batch_size], order[batch_size:]
        src, dec_in, dec_out = _batch(batch, src_vocab, tgt_vocab)
        logits = net(src, dec_in)  # [batch, target, vocab]
        loss = F.cross_entropy(logits.transpose(1, 2), dec_out, ignore_index=cfg.pad_id)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), CLIP)
        optimiser.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
    seconds = time.perf_counter() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    net.eval()
    save_file({k: v.detach().contiguous() for k, v in net.state_dict().items()},
              str(weights_path(name, out_dir)))
    card = {
        "config": cfg.to_dict(), "src_vocab": src_vocab.itos, "tgt_vocab": tgt_vocab.itos,
        "corpus": {"seed": seed, "n_train": len(corpus.train), "n_test": len(corpus.test)},
        "training": {"steps": steps, "batch_size": batch_size, "lr": lr, "clip": CLIP,
                     "threads": 1, "seconds": round(seconds, 1), "torch": torch.__version__,
                     "final_loss": round(loss.item(), 4), "kernels": kernels()},
    }
    model = RecurrentTranslator(name, net, torch.device("cpu"), src_vocab, tgt_vocab, card)
    card["held_out"] = accuracy_by_length(model, corpus.test)
    card_path(name, out_dir).write_text(json.dumps(card, ensure_ascii=False, indent=1),
                                        encoding="utf-8")
    return card


def accuracy_by_length(model, pairs, bins=LENGTH_BINS, batch_size: int = 250) -> dict:
    """Exact-match accuracy of greedy translation over ``pairs``, overall and per bin of the
    number of English words (``bins``: inclusive upper bounds). ``model`` has ``translate_ids``
    and vocabularies (a recurrent model or ``own-translator``)."""
    right: list[tuple[int, bool]] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        ids = [model.src_vocab.encode(split_words(p.en)) for p in chunk]
        for pair, src, out in zip(chunk, ids, model.translate_ids(ids)):
            right.append((len(src), model.tgt_vocab.decode(out) == split_words(pair.zh)))
    per_bin, low = [], 0
    for high in bins:
        hits = [ok for n, ok in right if low < n <= high]
        per_bin.append({"words": [low + 1, high], "sentences": len(hits),
                        "exact_match": sum(hits) / len(hits) if hits else None})
        low = high
    return {"exact_match": sum(ok for _n, ok in right) / len(right), "sentences": len(right),
            "by_length": per_bin}


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m model.own.train_recurrent",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=MODELS, action="append",
                        help="which model (repeat for several; default all)")
    parser.add_argument("--seed", type=int, default=0, help="corpus and initialisation seed")
    parser.add_argument("--steps", type=int, default=STEPS, help="optimiser steps")
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR,
                        help=f"folder for the weights and cards (default: {WEIGHTS_DIR})")
    args = parser.parse_args(argv)
    for name in args.model or MODELS:
        card = train_one(name, seed=args.seed, steps=args.steps, out_dir=args.out)
        print(f"{name}: trained in {card['training']['seconds']} s; held-out exact match "
              f"{card['held_out']['exact_match']:.1%}; by length " + ", ".join(
                  f"{b['words'][0]}-{b['words'][1]}: {b['exact_match']:.0%}"
                  for b in card["held_out"]["by_length"] if b["sentences"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
