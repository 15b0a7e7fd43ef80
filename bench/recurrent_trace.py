"""How closely the recurrent translators' traces follow their pass recomputed by hand, and what
a trace costs.

    .venv/bin/python -m bench.recurrent_trace                 # 100 held-out sentences
    .venv/bin/python -m bench.recurrent_trace --sentences 20

For own-rnn, own-gru and own-bahdanau (``load(name).trace``) over held-out sentences of the
translator's corpus: the largest difference between a trace's cross-attention and the numpy
float64 recomputation of the whole pass from the parameters (the reference of
``tests/unit/test_recurrent_trace.py``; for the single-vector models the trace's one-hot rows
against nothing to compute: 0 by construction), the largest difference of each step's written
token probability, and the median time of a trace on the CPU.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100,
                        help="held-out sentences of make_corpus(0) (default 100)")
    args = parser.parse_args(argv)
    from model import load
    from model.loader import RECURRENT
    from model.own.training_pairs import make_corpus
    from tests.unit.test_recurrent_trace import _by_hand

    pairs = make_corpus(0).test[:args.sentences]
    for name in RECURRENT:
        model = load(name, device="cpu")
        weight_gap = probability_gap = 0.0
        seconds = []
        for pair in tqdm(pairs, desc=name, leave=False):
            started = time.perf_counter()
            trace = model.trace(pair.en)
            seconds.append(time.perf_counter() - started)
            alpha, _contexts, _states, probabilities = _by_hand(
                model, list(trace.source_ids), list(trace.target_ids))
            if alpha is not None:
                weight_gap = max(weight_gap, float(np.abs(
                    trace.weights("decoder.cross", 0, 0) - alpha).max()))
            for t, step in enumerate(trace.steps):
                written = probabilities[t][model.tgt_vocab.stoi[step.token]]
                probability_gap = max(probability_gap, abs(step.probability - written))
        print(f"{name}: {len(pairs)} sentences; largest |weight - reference| "
              f"{weight_gap:.1e}, largest |p(written) - reference| {probability_gap:.1e}; "
              f"a trace takes {1000 * statistics.median(seconds):.1f} ms (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
