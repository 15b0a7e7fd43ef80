"""Long inputs, every step from the capture to the browser: one table.

    .venv/bin/python -m bench.run            # 512, 2k and 8k tokens (about 25 minutes here)
    .venv/bin/python -m bench.run --quick    # 512 and 2k tokens, no browser (a few minutes)
    .venv/bin/python -m bench.run --device cuda

Every figure is the median of ``--runs`` (at least 5) measurements, and what is compared is
measured side by side in this one process, alternating, so that a loaded machine slows both:

- capture / plain forward: CPU seconds (process time; on CUDA, wall seconds after a
  synchronise) of ``trace_ids`` against the model's own forward pass with the same fused
  attention (SDPA) and the same last-position logits; smollm2 at 512, 2k, 8k, minilm at 128,
  512. Peak memory of each: the rise of resident memory (CUDA: of torch's peak allocation)
  over what was held before the call.
- one head (exact, ``trace.weights``) and one layer (every head, ``trace.layer_weights``);
  the head as Explore draws it (pooled to 256 a side where the model ran).
- the analyses: one pass over every head of every layer (``layer_summaries``, shared by the
  three pages), then head statistics, rollout and the model view figure from it.
- the bytes of each view's figure as Plotly JSON (what goes to the browser).
- the server time of an Explore rerun that changes only the head (AppTest, the app's own
  script, trace and layer cached) at 2k.
- Chromium: Explore drawn (the heatmap in the page, the run over) after the trace is
  cached, at 512 and 2k (not with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = ("The cat sat on the mat because it was tired and the dog slept under the table while "
         "the bird sang in the tree .").split()
ROWS: list[tuple[str, str, str]] = []


def row(what: str, size: str, value: str) -> None:
    ROWS.append((what, size, value))
    print(f"  {what:58s} {size:>7s}  {value}", flush=True)


def median(values) -> float:
    return statistics.median(values)


def text_of(model, n_tokens: int) -> list[int]:
    """Input ids of exactly ``n_tokens`` tokens of running English text."""
    words = " ".join(WORDS[i % len(WORDS)] for i in range(n_tokens))
    ids = model.tokenizer(words)["input_ids"][:n_tokens]
    assert len(ids) == n_tokens, (len(ids), n_tokens)
    return ids


class Peak:
    """The peak rise of memory during a block: resident memory sampled every 2 ms on the CPU,
    torch's peak allocation on CUDA."""

    def __init__(self, cuda: bool):
        import psutil

        self.cuda, self.process = cuda, psutil.Process()

    def __enter__(self):
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.before = torch.cuda.memory_allocated()
            return self
        self.before = self.peak = self.process.memory_info().rss
        self.running = True

        def sample():
            while self.running:
                self.peak = max(self.peak, self.process.memory_info().rss)
                time.sleep(0.002)

        self.sampler = threading.Thread(target=sample, daemon=True)
        self.sampler.start()
        return self

    def __exit__(self, *exc):
        import torch

        if self.cuda:
            torch.cuda.synchronize()
            self.rise = torch.cuda.max_memory_allocated() - self.before
        else:
            self.running = False
            self.sampler.join()
            self.rise = self.peak - self.before


def clock(cuda: bool) -> Callable[[], float]:
    """CPU seconds of this process (all threads), or wall seconds on CUDA."""
    return time.perf_counter if cuda else time.process_time


def timed(f, cuda: bool) -> float:
    import torch

    tick = clock(cuda)
    start = tick()
    f()
    if cuda:
        torch.cuda.synchronize()
    return tick() - start


def bench_capture(spec: str, sizes, runs: int, device: str) -> dict:
    """Capture vs plain forward, side by side; returns the traces of the sizes (by size)."""
    import torch

    from model import load

    model = load(spec, device=device)
    cuda = model.device.type == "cuda"
    kwargs = {"logits_to_keep": 1} if model.family == "decoder-only" else {}
    traces = {}
    for n in sizes:
        ids = text_of(model, n)
        inputs = torch.tensor([ids], device=model.device)

        def plain(inputs=inputs):
            with torch.inference_mode():
                model.model(inputs, attention_mask=torch.ones_like(inputs), use_cache=False,
                            **kwargs)

        def capture(n=n, ids=ids):
            traces[n] = model.trace_ids(ids)

        plain(), capture()  # warm
        plains, captures, plain_peak, capture_peak = [], [], [], []
        for _run in range(runs):
            with Peak(cuda) as p:
                plains.append(timed(plain, cuda))
            plain_peak.append(p.rise)
            traces.pop(n, None)
            with Peak(cuda) as p:
                captures.append(timed(capture, cuda))
            capture_peak.append(p.rise)
        unit = "wall s" if cuda else "CPU s"
        row(f"{spec}: capture / plain forward ({unit})", f"{n:,}",
            f"{median(captures) / median(plains):.2f}× ({median(captures):.2f} / "
            f"{median(plains):.2f})")
        row(f"{spec}: peak memory rise, capture / plain", f"{n:,}",
            f"{median(capture_peak) / 2**30:.2f} / {median(plain_peak) / 2**30:.2f} GB")
    return traces


def bench_heads(trace, n: int, runs: int, cuda: bool) -> None:
    from model.reading.blocks import head_pooled

    name = trace.names[0]
    layer = trace.layers(name) // 2
    def seconds(f) -> float:
        return median([timed(f, cuda) for _ in range(runs)])

    row("one head, exact (s)", f"{n:,}",
        f"{seconds(lambda: trace.weights(name, layer, 3)):.3f}")
    row("one head as Explore draws it, ≤256² cells (s)", f"{n:,}",
        f"{seconds(lambda: head_pooled(trace, name, layer, 3, 256)):.3f}")
    row("one layer, every head exact (s)", f"{n:,}",
        f"{seconds(lambda: trace.layer_weights(name, layer)):.2f}")


def bench_analyses(trace, n: int, runs: int) -> None:
    import numpy as np

    import viz
    from model.analysis.rollout import rollout
    from model.analysis.statistics import head_stats, layer_summaries
    from viz.sizes import GRID_SIDE, TILE_SIDE

    name = trace.names[0]
    passes, stats, rolls, views = [], [], [], []
    for _run in range(runs):
        start = time.perf_counter()
        summaries = layer_summaries(trace, name, tile=TILE_SIDE, grid=GRID_SIDE)
        passes.append(time.perf_counter() - start)
        start = time.perf_counter()
        head_stats(trace, name, summaries)
        stats.append(time.perf_counter() - start)
        start = time.perf_counter()
        rollout(trace, name, summaries=summaries)
        rolls.append(time.perf_counter() - start)
        start = time.perf_counter()
        viz.model_view(trace, name, tiles=np.stack([s.tiles for s in summaries])).to_json()
        views.append(time.perf_counter() - start)
    row("every head of every layer, one pass (s, wall)", f"{n:,}", f"{median(passes):.2f}")
    for what, values in (("head statistics", stats), ("rollout", rolls),
                         ("model view figure", views)):
        row(f"  then {what} (s, wall)", f"{n:,}", f"{median(values):.3f}  (total "
            f"{median(passes) + median(values):.2f})")


def bench_figures(trace, n: int) -> None:
    """Bytes of each view's figure as Plotly JSON."""
    import numpy as np
    import plotly.io as pio

    import viz
    from model.analysis.rollout import rollout, rollout_factor
    from model.analysis.statistics import head_stats, layer_summaries
    from model.reading.blocks import head_pooled
    from viz.pooling import block_labels
    from viz.sizes import GRID_SIDE, HEAD_SIDE, TILE_SIDE

    name = trace.names[0]
    tokens = list(trace.tokens)
    layer = trace.layers(name) // 2
    summaries = layer_summaries(trace, name, tile=TILE_SIDE, grid=GRID_SIDE)
    weights, factors = head_pooled(trace, name, layer, 3, HEAD_SIDE)
    mask = trace.mask(name, layer)
    figures = {
        "Explore head heatmap": viz.attention_heatmap(weights, tokens, tokens, allowed=mask,
                                                      factors=factors),
        "Explore heads grid": viz.heads_grid(summaries[layer].grid, tokens, tokens,
                                             allowed=mask, factors=summaries[layer].grid_factors),
        "model view": viz.model_view(trace, name,
                                     tiles=np.stack([s.tiles for s in summaries])),
        "head statistics": viz.stats_heatmap(head_stats(trace, name, summaries)["entropy"],
                                             "entropy", "entropy"),
    }
    flow = rollout(trace, name, summaries=summaries)[-1]
    f = rollout_factor(n)
    figures["rollout"] = viz.attention_heatmap(flow, block_labels(tokens, f),
                                               block_labels(tokens, f))
    for what, fig in figures.items():
        row(f"figure bytes: {what}", f"{n:,}", f"{len(pio.to_json(fig)) / 2**20:.2f} MB")


def bench_rerun(n: int, runs: int) -> None:
    """Server time of an Explore rerun that changes only the head (AppTest)."""
    os.environ.setdefault("ATTENTION_EXPLORER_DEBUG", "1")
    from model import load
    from tests.helpers import app_test

    model = load("smollm2", device="cpu")
    text = model.tokenizer.decode(text_of(model, n))
    at = app_test("explore", model_choice="smollm2", text=text)
    if at.exception:
        raise SystemExit(at.exception[0].value)
    times = []
    heads = [h % 9 for h in range(1, runs + 2)]
    at.selectbox(key="head").set_value(heads[0]).run()  # its layer and figures warm
    for head in heads[1:]:
        start = time.perf_counter()
        at.selectbox(key="head").set_value(head).run()
        times.append(time.perf_counter() - start)
        assert not at.exception, at.exception
    row("Explore rerun changing the head: first view of a head (s)", f"{n:,}",
        f"{median(times):.2f}")
    times = []
    for head in heads[1:]:
        start = time.perf_counter()
        at.selectbox(key="head").set_value(head).run()
        times.append(time.perf_counter() - start)
    row("Explore rerun changing the head: back to a head seen (s)", f"{n:,}",
        f"{median(times):.2f}")


def bench_browser(sizes, runs: int) -> None:
    """Chromium: Explore drawn after the trace is cached (another page, then Explore)."""
    from model import load
    from tests.helpers import choose_model, chromium_page, served_app, wait_for_run

    model = load("smollm2", device="cpu")
    drawn = ("() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
             "document.querySelectorAll('[data-testid=\"stPlotlyChart\"] .heatmaplayer "
             "image').length >= 2")
    with served_app() as url, chromium_page(1920, 1080) as page:
        page.goto(f"{url}/explore?device=cpu")
        wait_for_run(page)
        choose_model(page, "smollm2")
        wait_for_run(page)
        for n in sizes:
            text = model.tokenizer.decode(text_of(model, n))
            box = page.get_by_label("Text", exact=True)
            box.fill(text)
            box.press("Control+Enter")
            wait_for_run(page)  # traced and drawn once: now everything is cached
            times = []
            for _run in range(runs):
                page.get_by_role("link", name="Start").first.click()
                wait_for_run(page)
                start = time.perf_counter()
                page.get_by_role("link", name="Explore").first.click()
                page.wait_for_timeout(100)
                page.wait_for_function(drawn, timeout=120_000)
                times.append(time.perf_counter() - start)
            row("Chromium: Explore drawn, trace cached (s)", f"{n:,}", f"{median(times):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="512 and 2k tokens, no browser")
    parser.add_argument("--runs", type=int, default=5, help="measurements per figure (≥ 5)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    runs = max(5, args.runs)
    import app_pages.cache.getters  # noqa: F401  (the server's allocator settings, as the app runs)
    from model.device import resolve_device

    device = str(resolve_device(args.device))
    cuda = device.startswith("cuda")
    import torch

    print(f"bench.run on {device} ({torch.get_num_threads()} CPU threads), medians of {runs}")
    smollm2 = (512, 2048) if args.quick else (512, 2048, 8192)
    traces = bench_capture("smollm2", smollm2, runs, device)
    bench_capture("minilm", (128, 512), runs, device)
    for n in smollm2[1:]:
        bench_heads(traces[n], n, runs, cuda)
    for n in smollm2[1:]:
        bench_analyses(traces[n], n, runs)
    for n in smollm2:
        bench_figures(traces[n], n)
    traces.clear()
    if not cuda:  # the app's own reruns and the browser run on this machine's CPU
        bench_rerun(2048, runs)
        if not args.quick:
            bench_browser((512, 2048), runs)
    if args.json:
        args.json.write_text(json.dumps(ROWS, indent=1, ensure_ascii=False))
    print("\n| measure | tokens | median |\n|---|---:|---|")
    for what, size, value in ROWS:
        print(f"| {what.strip()} | {size} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
