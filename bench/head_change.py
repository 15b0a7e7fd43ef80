"""Server time of an Explore rerun that changes only the head (smollm2), and the layer
computation such a rerun no longer repeats (it is cached since issue 13's first step).

    .venv/bin/python -m bench.head_change --tokens 1000

Runs the app's own script under AppTest on the CPU, so the time is the whole rerun: widgets,
the cached trace and layer, pooling and the figures. Medians of the reruns, in one process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

WORDS = ("The cat sat on the mat because it was tired and the dog slept under the table while "
         "the bird sang in the tree").split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1000, help="words of the text")
    parser.add_argument("--reruns", type=int, default=6)
    args = parser.parse_args()
    os.environ.setdefault("ATTENTION_EXPLORER_DEBUG", "1")
    from app_pages.cache import get_trace
    from tests.helpers import app_test

    text = " ".join(WORDS[i % len(WORDS)] for i in range(args.tokens))
    at = app_test("explore", model_choice="smollm2", text=text)
    if at.exception:
        raise SystemExit(at.exception[0].value)
    reruns = []
    for head in range(1, args.reruns + 1):
        started = time.perf_counter()
        at.selectbox(key="head").set_value(head % 9).run()
        reruns.append(time.perf_counter() - started)
    trace = get_trace("smollm2", "cpu", text)
    layer = at.selectbox(key="layer").value
    layer_times = []
    for _run in range(5):
        started = time.perf_counter()
        trace.layer_weights("decoder.self", layer)
        layer_times.append(time.perf_counter() - started)
    print(f"smollm2, {len(trace.tokens):,} tokens: a head-change rerun takes "
          f"{statistics.median(reruns):.2f} s (median of {len(reruns)}); the layer's "
          f"computation it no longer repeats takes {statistics.median(layer_times):.2f} s "
          f"(median of 5)")


if __name__ == "__main__":
    main()
