"""Train ``own-translator``: ``python -m model.own.train`` (see ``--help``).

A small encoder-decoder (d_model 128, 4 heads, 3 + 3 layers, d_ff 512) on the synthetic corpus of
:mod:`model.own.training_pairs`, with label smoothing, the warm-up schedule of "Attention Is All
You Need"
(lr = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)) and guided alignment: a small
extra loss pulls the head-averaged cross-attention of the last decoder layer towards the
corpus's gold word alignment (Garg et al. 2019; Marian's ``--guided-alignment``), so that the
alignment a student sees is crisp. Writes the weights as safetensors and a JSON card with the
config, vocabularies, corpus seed, training time and held-out scores.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tqdm import tqdm

from model.device import resolve_device
from model.own.config import TransformerConfig
from model.own.training_pairs import make_corpus, vocabularies
from model.own.transformer import Transformer
from model.own.translator import CARD, STAGES_DIR, WEIGHTS, Translator, stage_path
from model.own.vocab import WordVocab, split_words

CONFIG = dict(d_model=128, n_heads=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=512,
              dropout=0.1, max_len=64)
# Optimiser steps after which the weights are kept as training stages (the last stage is the
# trained model itself).
STAGES = (0, 10, 30, 100)


def _save_stage(net: Transformer, out_dir: Path, step: int) -> None:
    folder = out_dir / STAGES_DIR.name
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().to(torch.float16).contiguous()
               for k, v in net.state_dict().items()}, str(stage_path(step, folder)))


def _batch(pairs, src_vocab: WordVocab, tgt_vocab: WordVocab, device):
    """Padded tensors: src [B, S], decoder input/output [B, T], gold alignment [B, T] (-1: none)."""
    src = [src_vocab.encode(split_words(p.en)) for p in pairs]
    tgt = [tgt_vocab.encode(split_words(p.zh)) for p in pairs]
    S, T = max(map(len, src)), max(map(len, tgt)) + 1
    src_t = torch.zeros(len(pairs), S, dtype=torch.long)
    dec_in = torch.zeros(len(pairs), T, dtype=torch.long)
    dec_out = torch.zeros(len(pairs), T, dtype=torch.long)
    align = torch.full((len(pairs), T), -1, dtype=torch.long)
    for row, (s, t, pair) in enumerate(zip(src, tgt, pairs)):
        src_t[row, :len(s)] = torch.tensor(s)
        dec_in[row, :len(t) + 1] = torch.tensor([tgt_vocab.bos_id, *t])
        dec_out[row, :len(t) + 1] = torch.tensor([*t, tgt_vocab.eos_id])
        align[row, :len(t)] = torch.tensor(pair.align)  # query t writes word t + 1
    return src_t.to(device), dec_in.to(device), dec_out.to(device), align.to(device)


def noam_lr(step: int, d_model: int, warmup: int, factor: float) -> float:
    """The warm-up schedule: linear rise for ``warmup`` steps, then ∝ step^-0.5."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def train(seed: int = 0, steps: int = 3000, batch_size: int = 64, warmup: int = 400,
          factor: float = 1.0, label_smoothing: float = 0.1, align_weight: float = 0.3,
          device: str = "auto", out_dir: Path = WEIGHTS.parent, progress: bool = True,
          stages: tuple[int, ...] = STAGES) -> dict:
    """Train, evaluate on the held-out split, write weights and card; return the card.

    ``stages``: optimiser steps after which the weights are also written, in float16, to
    ``stages/step{N}.safetensors`` (:func:`stage_path`), with the final weights as the last
    stage and ``stages/stages.json`` listing them, so that the app can show how
    cross-attention learns the alignment (0: the random initialisation)."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    device_t = resolve_device(device)
    corpus = make_corpus(seed)
    en_words, zh_words = vocabularies(corpus.train + corpus.test)
    src_vocab, tgt_vocab = WordVocab(en_words), WordVocab(zh_words)
    cfg = TransformerConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab),
                            **CONFIG)
    net = Transformer(cfg).to(device_t).train()
    optimiser = torch.optim.Adam(net.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: noam_lr(s + 1, cfg.d_model, warmup, factor))
    last_cross = net.decoder.layers[-1].cross_attn.hook_pattern
    seen: dict[str, torch.Tensor] = {}
    last_cross.register_forward_hook(lambda _m, _i, out: seen.__setitem__("cross", out))

    order: list = []
    bar = tqdm(range(steps), desc="training own-translator", disable=not progress,
               file=sys.stderr)
    for done in bar:
        if done in stages:
            _save_stage(net, out_dir, done)
        if len(order) < batch_size:
            order = list(corpus.train)
            rng.shuffle(order)
        batch, order = order[:batch_size], order[batch_size:]
        src, dec_in, dec_out, align = _batch(batch, src_vocab, tgt_vocab, device_t)
        logits = net(src_ids=src, tgt_ids=dec_in)  # [batch, target, vocab]
        loss_tok = F.cross_entropy(logits.transpose(1, 2), dec_out, ignore_index=cfg.pad_id,
                                   label_smoothing=label_smoothing)
        cross = seen["cross"].mean(1)  # [batch, target, source], averaged over heads
        has_gold = align >= 0
        gold = cross.gather(-1, align.clamp(min=0)[..., None])[..., 0]  # [batch, target]
        loss_align = -(gold[has_gold] + 1e-9).log().mean()
        loss = loss_tok + align_weight * loss_align
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        schedule.step()
        bar.set_postfix(loss=f"{loss_tok.item():.3f}", align=f"{loss_align.item():.3f}")
    train_seconds = time.perf_counter() - started

    out_dir.mkdir(parents=True, exist_ok=True)
    weights, card_path = out_dir / WEIGHTS.name, out_dir / CARD.name
    net.eval()
    save_file({k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()},
              str(weights))
    _save_stage(net, out_dir, steps)
    written = [*sorted(s for s in stages if s < steps), steps]
    (out_dir / STAGES_DIR.name / "stages.json").write_text(json.dumps(
        {"steps": written, "seed": seed, "final_loss": round(loss_tok.item(), 4)}, indent=1),
        encoding="utf-8")
    card = {
        "config": cfg.to_dict(), "src_vocab": src_vocab.itos, "tgt_vocab": tgt_vocab.itos,
        "corpus": {"seed": seed, "n_train": len(corpus.train), "n_test": len(corpus.test)},
        "training": {"steps": steps, "batch_size": batch_size, "warmup": warmup,
                     "factor": factor, "label_smoothing": label_smoothing,
                     "align_weight": align_weight, "device": str(device_t),
                     "seconds": round(train_seconds, 1), "torch": torch.__version__,
                     "final_loss": round(loss_tok.item(), 4)},
    }
    card_path.write_text(json.dumps(card, ensure_ascii=False, indent=1), encoding="utf-8")
    model = Translator.from_files(weights, card_path, device=str(device_t))
    card["held_out"] = evaluate(model, corpus.test)
    card_path.write_text(json.dumps(card, ensure_ascii=False, indent=1), encoding="utf-8")
    return card


def evaluate(model: Translator, pairs, batch_size: int = 250) -> dict:
    """Exact-match accuracy of greedy translation on ``pairs``."""
    correct = 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        ids = [model.src_vocab.encode(split_words(p.en)) for p in chunk]
        for pair, out in zip(chunk, model.translate_ids(ids)):
            correct += model.tgt_vocab.decode(out) == split_words(pair.zh)
    return {"exact_match": correct / len(pairs), "sentences": len(pairs)}


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m model.own.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="corpus and initialisation seed")
    parser.add_argument("--steps", type=int, default=3000, help="optimiser steps")
    parser.add_argument("--batch-size", type=int, default=64, help="sentence pairs per step")
    parser.add_argument("--align-weight", type=float, default=0.3,
                        help="weight of the guided-alignment loss (0 turns it off)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda")
    parser.add_argument("--out", type=Path, default=WEIGHTS.parent,
                        help=f"folder for the weights and card (default: {WEIGHTS.parent})")
    args = parser.parse_args(argv)
    card = train(seed=args.seed, steps=args.steps, batch_size=args.batch_size,
                 align_weight=args.align_weight, device=args.device, out_dir=args.out)
    print(f"trained in {card['training']['seconds']} s; held-out exact match "
          f"{card['held_out']['exact_match']:.1%} of {card['held_out']['sentences']}; "
          f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
