"""Many sentences: batched versus one at a time, and the Ray engine's overhead.

    .venv/bin/python -m bench.corpus                 # 1,000 sentences of about 20 tokens
    .venv/bin/python -m bench.corpus --sentences 200 --runs 3
    .venv/bin/python -m bench.corpus --device cuda --dtype bfloat16

For minilm and smollm2, sentences per second (wall time, median of ``--runs``) of the corpus
engine's statistics (:func:`model.corpus.engine.corpus_table`: every head's statistics of every
sentence) three ways, measured alternately in this one process so that a loaded machine
slows all of them:

- batched: padded batches of ``--batch-size`` sentences, one forward pass and one
  computation per layer for each batch;
- one at a time through the same engine (``batch_size=1``);
- one at a time as the Head statistics page computes one sentence (``trace`` then
  ``head_stats``: the per-layer summaries with their pooled tiles and grids).

Then the Ray engine (``run_corpus(engine="ray")`` on a local cluster started here, its start
not counted, ``--workers`` actors) against the local engine on the same sentences.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def sentences(n: int) -> list[str]:
    """``n`` different English sentences of about 20 tokens: two sentences of the
    translator's synthetic corpus joined by "and"."""
    from model.own.training_pairs import make_corpus

    pool = [p.en for p in make_corpus(0).train]
    def joined(i: int) -> str:
        first, second = pool[2 * i % len(pool)], pool[(2 * i + 1) % len(pool)]
        return f"{first.rstrip(' .')} and {second[0].lower()}{second[1:]}"

    return [joined(i) for i in range(n)]


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def rates(spec: str, texts: list[str], args) -> None:
    """Print the sentences per second of ``spec`` batched and one at a time."""
    from bench.run import load_model
    from model.analysis.statistics import head_stats
    from model.corpus.engine import corpus_table

    model = load_model(spec, args.device, args.dtype)
    tokens = [model.count_tokens(t).source for t in texts]
    print(f"\n{spec}: {statistics.mean(tokens):.1f} tokens per sentence on average "
          f"({min(tokens)}–{max(tokens)})")
    corpus_table(model, texts[:8], batch_size=4)  # warm up

    def one_by_one_page():
        for text in texts:
            trace = model.trace(text)
            for name in trace.names:
                head_stats(trace, name)

    ways = {"batched": lambda: corpus_table(model, texts, batch_size=args.batch_size),
            "one at a time (engine)": lambda: corpus_table(model, texts, batch_size=1),
            "one at a time (Head statistics page)": one_by_one_page}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    for _run in range(args.runs):
        for way, run in ways.items():
            seconds[way].append(timed(run))
    batched = statistics.median(seconds["batched"])
    for way, values in seconds.items():
        t = statistics.median(values)
        print(f"  {way:40s} {len(texts) / t:8.1f} sentences/s  ({t:.1f} s; "
              f"batched is {t / batched:.1f}× faster)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--models", default="minilm,smollm2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None,
                        help="auto, float32, bfloat16 or float16 (where model.load takes dtype=)")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args(argv)

    from model.corpus.engine import run_corpus

    texts = sentences(args.sentences)
    print(f"{len(texts)} sentences, {args.runs} runs each, batch {args.batch_size}, "
          f"{args.device}{', ' + args.dtype if args.dtype else ''}")
    for spec in args.models.split(","):
        rates(spec, texts, args)
    if args.no_ray:
        return 0
    import ray

    spec = args.models.split(",")[0]
    import inspect

    if args.dtype and "dtype" in inspect.signature(run_corpus).parameters:
        run_corpus = functools.partial(run_corpus, dtype=args.dtype)
    ray.init(num_cpus=max(2, args.workers), include_dashboard=False, log_to_driver=False)
    try:
        run_corpus(spec, texts[:8], engine="ray", device=args.device, workers=args.workers)
        local, on_ray = [], []
        for _run in range(args.runs):
            local.append(timed(lambda: run_corpus(spec, texts, device=args.device,
                                                  batch_size=args.batch_size)))
            on_ray.append(timed(lambda: run_corpus(spec, texts, engine="ray",
                                                   device=args.device,
                                                   batch_size=args.batch_size,
                                                   workers=args.workers)))
    finally:
        ray.shutdown()
    lo, ra = statistics.median(local), statistics.median(on_ray)
    print(f"\nRay engine, {spec}, {args.workers} actors on this machine (the model loaded in "
          f"each run: local once, each actor once):")
    print(f"  local {lo:.1f} s, Ray {ra:.1f} s: Ray takes {ra / lo:.2f}× the local time "
          f"({ra - lo:+.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
