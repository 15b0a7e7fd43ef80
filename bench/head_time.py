"""One exact head at a long input, the first ones after a trace included: the time of
``trace.weights(kind, layer, head)`` for each layer's first head read, then for heads read again,
and the pooled head view of a 32k-token input.

    .venv/bin/python -m bench.head_time                 # smollm2 at 8,190 tokens, llama-32k
    .venv/bin/python -m bench.head_time --tokens 2048 --no-long

Wall seconds (the reader is what a user waits for), medians and the largest, in one process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _seconds(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def exact_heads(spec: str, n_tokens: int, device: str) -> None:
    from bench.request_memory import text_of
    from model import load

    loaded = load(spec, device=device)
    trace = loaded.trace(text_of(loaded, n_tokens))
    name = trace.names[-1]
    n = len(trace.axes(name)[0])
    layers = range(trace.layers(name))
    first = [_seconds(lambda layer=layer: trace.weights(name, layer, layer % trace.n_heads))
             for layer in layers]  # the first head read of each layer, just after the trace
    again = [_seconds(lambda layer=layer: trace.weights(name, layer, layer % trace.n_heads))
             for layer in layers]
    print(f"{spec} {name} at {n:,} tokens ({loaded.device}, {loaded.dtype}): one exact head")
    print(f"  first read of each layer's head: median {statistics.median(first):.3f} s, "
          f"largest {max(first):.3f} s, the very first {first[0]:.3f} s")
    print(f"  read again:                      median {statistics.median(again):.3f} s, "
          f"largest {max(again):.3f} s")


def pooled_long(device: str, runs: int) -> None:
    from bench.local_models import random_llama
    from bench.request_memory import LONG_MODEL
    from model import load
    from model.reading.blocks import head_pooled, region
    from viz.sizes import HEAD_SIDE

    loaded = load(str(random_llama(LONG_MODEL)), device=device)
    trace = loaded.trace(_at_most(loaded, 32768))
    name = trace.names[-1]
    n = len(trace.axes(name)[0])
    pooled = [_seconds(lambda i=i: head_pooled(trace, name, i % 2, i % trace.n_heads,
                                               HEAD_SIDE)) for i in range(runs)]
    zoom = [_seconds(lambda i=i: region(trace, name, 1, i % trace.n_heads,
                                        range(n // 2, n // 2 + 256), range(n // 2 - 200,
                                                                           n // 2 + 56)))
            for i in range(runs)]
    print(f"llama-32k at {n:,} tokens ({loaded.device}): one head as Explore draws it")
    print(f"  pooled to {HEAD_SIDE} a side: median {statistics.median(pooled):.3f} s, "
          f"largest {max(pooled):.3f} s ({runs} heads)")
    print(f"  exact 256 x 256 zoom:   median {statistics.median(zoom):.3f} s")


def _at_most(loaded, n_tokens: int) -> str:
    from bench.request_memory import text_of

    text = text_of(loaded, n_tokens)
    while loaded.count_tokens(text).source > n_tokens:
        text = text.rsplit(" ", 1)[0]
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--tokens", type=int, default=8190)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-long", action="store_true", help="leave the 32k row out")
    args = parser.parse_args()
    exact_heads(args.model, args.tokens, args.device)
    if not args.no_long:
        pooled_long(args.device, args.runs)


if __name__ == "__main__":
    main()
