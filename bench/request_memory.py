"""The memory a request takes, measured, beside the estimate the server checks before it runs
(:mod:`model.budget`); and the server's memory after many distinct long traces.

    .venv/bin/python -m bench.request_memory [--quick]
    .venv/bin/python -m bench.request_memory --traces 20 --tokens 2000   # the cache's bound

Part 1 runs each (model, length) in a fresh process: load the model, then trace the text and
compute what Explore computes for one layer (its summary, one head, both heatmaps),
sampling the process's resident memory every 2 ms. Printed: the rise of the peak over the
memory held before (the model), the estimate, and their ratio (an estimate must not be below).

Part 2 runs the Explore page under Streamlit's AppTest (the same script, caches and limits as
the server) on ``--traces`` distinct texts of ``--tokens`` tokens with smollm2, and prints the
process's memory after each, then the shared cache's size.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The long rows' model (bench.local_models.random_llama), built once in the user's cache.
LONG_MODEL = Path.home() / ".cache" / "attention-explorer" / "bench-llama-32k"
PARAGRAPH = ("The cat chased the mouse because it was hungry, then sat on the mat by the door "
             "while the dog slept under the table. ")


def text_of(spec_model, n_tokens: int, salt: int = 0) -> str:
    """A text of at least ``n_tokens`` tokens for the model (words numbered by ``salt``)."""
    words = (PARAGRAPH * (n_tokens // 10 + 2)).split()
    if salt:
        words = [f"{w}{salt}" if i % 7 == 0 else w for i, w in enumerate(words)]
    low, high = 1, len(words)
    while low < high:  # the fewest words that reach n_tokens
        mid = (low + high) // 2
        if spec_model.count_tokens(" ".join(words[:mid])).source >= n_tokens:
            high = mid
        else:
            low = mid + 1
    return " ".join(words[:low])


def _measure(spec: str, n_tokens: int) -> dict:
    sys.path.insert(0, str(ROOT))
    import psutil

    import viz
    from model import load
    from model.analysis.cuts import query_rows
    from model.analysis.statistics import summary_of
    from model.reading.blocks import head_pooled
    from viz.sizes import GRID_SIDE, HEAD_SIDE, TILE_SIDE

    loaded = load(spec, device="cpu")
    text = text_of(loaded, n_tokens)
    n = loaded.count_tokens(text)
    loaded.trace("warm up")
    process = psutil.Process()
    before = process.memory_info().rss
    peak, running = [before], [True]

    def sample():
        while running[0]:
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    trace = loaded.trace(text)
    name = trace.names[-1]
    # what Explore computes: the layer's summary, a head
    summary = summary_of(trace, name, 0, tile=TILE_SIDE, grid=GRID_SIDE)
    weights, factors = head_pooled(trace, name, 0, 0, HEAD_SIDE)
    rows, keys, allowed = query_rows(trace, name), trace.axes(name)[1], trace.mask(name, 0)
    viz.attention_heatmap(weights, rows.labels, keys, allowed=allowed, factors=factors).to_json()
    viz.heads_grid(summary.grid, rows.labels, keys, allowed=allowed,
                   factors=summary.grid_factors).to_json()
    seconds = time.perf_counter() - start
    running[0] = False
    sampler.join()
    return {"model": spec, "tokens": n.longest, "rise": peak[0] - before,
            "estimate": loaded.memory_needed(n), "seconds": seconds}


def part_one(cases: list[tuple[str, int]]) -> None:
    print(f"{'model':<12} {'tokens':>6} {'measured':>9} {'estimate':>9} {'ratio':>6} {'s':>6}")
    for spec, n_tokens in cases:
        out = subprocess.run([sys.executable, "-m", "bench.request_memory", "--one", spec,
                              str(n_tokens)], cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            print(f"{spec:<12} {n_tokens:>6} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        name = "llama-32k" if r["model"] == str(LONG_MODEL) else r["model"]
        print(f"{name:<12} {r['tokens']:>6} {r['rise'] / 2**30:>8.2f}G "
              f"{r['estimate'] / 2**30:>8.2f}G {r['estimate'] / r['rise']:>6.2f} "
              f"{r['seconds']:>6.1f}")


def part_two(n_traces: int, n_tokens: int) -> None:
    sys.path.insert(0, str(ROOT))
    import psutil
    from streamlit.testing.v1 import AppTest

    from app_pages.cache.getters import get_model, shared_cache

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    smollm2 = get_model("smollm2", "cpu")  # the app's own copy: loaded once
    process = psutil.Process()
    print(f"\nExplore with smollm2, {n_traces} distinct texts of {n_tokens} tokens "
          f"(AppTest, one process):")
    print(f"{'trace':>5} {'RSS GB':>7} {'cache GB':>8} {'entries':>7} {'s':>6}")
    peak = 0
    for i in range(n_traces):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        state = dict(device="cpu", model_choice="smollm2",
                     text=text_of(smollm2, n_tokens, salt=i + 1))
        for key, value in state.items():
            at.session_state[key] = value
        at.run()
        start = time.perf_counter()
        at.switch_page("app_pages/views/explore.py").run()
        seconds = time.perf_counter() - start
        if at.exception or at.error:
            print("failed:", [e.value for e in at.exception] + [e.value for e in at.error])
            return
        rss = process.memory_info().rss
        peak = max(peak, rss)
        cache = shared_cache()
        print(f"{i + 1:>5} {rss / 2**30:>7.2f} {cache.size / 2**30:>8.2f} {len(cache):>7} "
              f"{seconds:>6.1f}")
    print(f"after {n_traces} traces: {process.memory_info().rss / 2**30:.2f} GB "
          f"(peak seen between pages {peak / 2**30:.2f} GB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short inputs only")
    parser.add_argument("--traces", type=int, default=0, help="part 2: distinct traces")
    parser.add_argument("--tokens", type=int, default=2000, help="part 2: tokens per trace")
    parser.add_argument("--one", nargs=2, metavar=("SPEC", "TOKENS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(args.one[0], int(args.one[1]))))
        return
    if args.traces:
        part_two(args.traces, args.tokens)
        return
    sizes = {"own-random": (100, 300) if args.quick else (200, 500, 900),
             "minilm": (128, 512),
             "smollm2": (512, 2048) if args.quick else (512, 2048, 4096, 8192)}
    if not args.quick:  # the long end: a random Llama built here, 32k positions
        from bench.local_models import random_llama

        sizes[str(random_llama(LONG_MODEL))] = (8192, 16384, 32768)
    part_one([(spec, n) for spec, ns in sizes.items() for n in ns])


if __name__ == "__main__":
    main()
