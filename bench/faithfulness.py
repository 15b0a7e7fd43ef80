"""How often raw attention and weight × ‖value‖ disagree on which head reads a token.

    .venv/bin/python -m bench.faithfulness                  # minilm and smollm2, 40 sentences
    .venv/bin/python -m bench.faithfulness --models minilm --sentences 10

For each model, sentence, layer and key token j: the head whose mean raw weight on j (over the
queries that may see j) is largest, against the head whose mean α_ij ‖v_j W_Oʰ‖ on j is
largest (Kobayashi et al. 2020). Printed: the share of (sentence, layer, token) where the two
heads differ; the same per cell (layer, query, key: the head of largest α_ij against the head
of largest α_ij ‖v_j W_Oʰ‖); and how often the raw favourite is the first token, against the
norm-based favourite. Sentences: the translator's synthetic corpus, held-out pairs, as in
``bench.corpus``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def sentences(n: int) -> list[str]:
    from model.own.training_pairs import make_corpus

    return [p.en for p in make_corpus(0).test[:n]]


def disagreement(model, texts: list[str]) -> dict[str, float]:
    from model.analysis.moves import head_weights, norm_based

    per_token = per_cell = first_raw = first_norm = 0
    tokens_seen = cells_seen = rows = 0
    for text in tqdm(texts, desc=model.name, leave=False):
        parts = model.attention_parts(text)
        kind = model.family.kinds[0]
        for layer in range(len(parts.values[kind])):
            raw = head_weights(parts, kind, layer)  # [head, query, key]
            moved = norm_based(parts, kind, layer)
            allowed = np.asarray(parts.trace.mask(kind, layer), bool)  # [query, key]
            seen = allowed.sum(axis=0)  # queries that may see each key
            mean_raw = np.where(allowed, raw, 0).sum(axis=1) / np.maximum(seen, 1)
            mean_norm = np.where(allowed, moved, 0).sum(axis=1) / np.maximum(seen, 1)
            keys = seen > 0
            a, b = mean_raw.argmax(axis=0)[keys], mean_norm.argmax(axis=0)[keys]
            per_token += int((a != b).sum())
            tokens_seen += int(keys.sum())
            ca, cb = raw.argmax(axis=0)[allowed], moved.argmax(axis=0)[allowed]
            per_cell += int((ca != cb).sum())
            cells_seen += int(allowed.sum())
            # which key each head's rows favour most: the first token?
            row_raw = np.where(allowed, raw, -1).argmax(axis=-1)  # [head, query]
            row_norm = np.where(allowed, moved, -1).argmax(axis=-1)
            first_raw += int((row_raw == 0).sum())
            first_norm += int((row_norm == 0).sum())
            rows += row_raw.size
    return {"tokens": tokens_seen, "per_token": per_token / tokens_seen,
            "cells": cells_seen, "per_cell": per_cell / cells_seen,
            "first_raw": first_raw / rows, "first_norm": first_norm / rows, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["minilm", "smollm2"])
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    from model import load

    texts = sentences(args.sentences)
    print(f"{len(texts)} sentences of {min(map(len, map(str.split, texts)))}–"
          f"{max(map(len, map(str.split, texts)))} words")
    for spec in args.models:
        model = load(spec, device=args.device)
        found = disagreement(model, texts)
        print(f"{spec}: the head of largest mean raw weight on a token differs from the head "
              f"of largest mean weight × ‖value‖ for {found['per_token']:.1%} of "
              f"{found['tokens']:,} (sentence, layer, token); per cell (layer, query, key) "
              f"{found['per_cell']:.1%} of {found['cells']:,}; rows (head, query) whose "
              f"largest key is the first token: raw {found['first_raw']:.1%}, weight × "
              f"‖value‖ {found['first_norm']:.1%} of {found['rows']:,}")


if __name__ == "__main__":
    main()
