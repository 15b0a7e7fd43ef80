"""Long inputs, every step from the capture to the browser: one table.

    .venv/bin/python -m bench.run            # 512, 2k and 8k tokens (about 25 minutes here)
    .venv/bin/python -m bench.run --quick    # 512 and 2k tokens, no browser (a few minutes)
    .venv/bin/python -m bench.run --device cuda
    .venv/bin/python -m bench.run --long     # and the 32k row: a random Llama at 32,768 tokens
    .venv/bin/python -m bench.run --model random-llama --sizes 32768   # the 32k row alone
    .venv/bin/python -m bench.run --model PATH --sizes 2048,8192 --dtype bfloat16

Every figure is the median of ``--runs`` (at least 5) measurements (``--long-runs``, 3 by
default, above 8,192 tokens), and what is compared is measured side by side in this one
process, alternating, so that a loaded machine slows both:

- capture / plain forward: CPU seconds (process time; on CUDA, wall seconds after a
  synchronise) of ``trace_ids`` against the model's own forward pass with the same fused
  attention (SDPA) and the same last-position logits; smollm2 at 512, 2k, 8k, minilm at 128,
  512. Peak memory of each: the rise of resident memory (CUDA: of torch's peak allocation)
  over what was held before the call.
- one head (exact, ``trace.weights``) and one layer (every head, ``trace.layer_weights``),
  where one head's float32 weights take at most 1 GB (not at 32k: 4 GB); the head as Explore
  draws it (pooled to 256 a side where the model ran) and an exact zoom of 256 rows × 256 keys
  (``region``, the last rows and keys); each with its peak memory rise (the largest of the runs).
- the analyses: one pass over every head of every layer (``layer_summaries``, shared by the
  three pages), then head statistics, rollout and the model view figure from it, each with
  its peak memory rise.
- ``--long``: the 32k row, all of the above at 32,768 tokens on ``random-llama``: a random
  Llama-family checkpoint with a 32,768-position table built here (``bench/local_models.py``,
  under ``out/bench-models/``; small enough for a CPU: 2 layers, 4 heads, 2 K/V heads,
  d_model 64, d_head 16, 0.12M parameters; ``--long-model 1b`` for a 1B-parameter one).
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
ROWS_FILE: Path | None = None  # where each row is also appended as it is measured (bench.gpu)
EXACT_MOST = 2**30  # bytes of one head's float32 weights up to which the exact head is measured
LONG = 32768
ZOOM = 256  # rows and keys of the exact zoom
# Random Llama-family checkpoints built here (bench/local_models.py), with 32k positions.
RANDOM_LLAMA = "random-llama"
RANDOM_LLAMAS = {
    "tiny": dict(layers=2, heads=4, kv_heads=2, d_model=64, d_ff=128),  # d_head 16, for a CPU
    "1b": dict(layers=16, heads=32, kv_heads=8, d_model=2048, d_ff=8192),  # Llama-3.2-1B's shape
}


def row(what: str, size: str, value: str) -> None:
    ROWS.append((what, size, value))
    print(f"  {what:58s} {size:>7s}  {value}", flush=True)
    if ROWS_FILE is not None:
        with ROWS_FILE.open("a", encoding="utf-8") as out:
            out.write(json.dumps([what, size, value], ensure_ascii=False) + "\n")


def random_llama_path(size: str = "tiny", dtype: str = "float32", device: str = "cpu",
                      positions: int = LONG, folder: Path | None = None) -> Path:
    """The random Llama ``size`` (:data:`RANDOM_LLAMAS`) built once under ``out/bench-models``
    (or ``$BENCH_MODELS``), its weights made on ``device`` in ``dtype``."""
    from bench.local_models import random_llama

    folder = folder or Path(os.environ.get("BENCH_MODELS") or ROOT / "out" / "bench-models")
    path = folder / f"random-llama-{size}-{positions}-{dtype}"
    return random_llama(path, positions=positions, dtype=dtype, device=device,
                        **RANDOM_LLAMAS[size])


def load_model(spec: str, device: str, dtype: str | None = None):
    """``model.load(spec, device=...)``, with ``dtype=`` where ``load`` takes it (without it
    every model loads in float32); ``random-llama`` is the tiny checkpoint built here."""
    import inspect

    from model import load

    if spec == RANDOM_LLAMA:
        spec = str(random_llama_path())
    if "dtype" in inspect.signature(load).parameters:
        return load(spec, device=device, dtype=dtype or "auto")
    if dtype not in (None, "auto", "float32"):
        print(f"  (model.load takes no dtype= yet: {spec} loads in float32, not {dtype})")
    return load(spec, device=device)


def describe(model) -> str:
    """What a model is: its shape, parameters and precision."""
    d = model.dims
    parameters = sum(p.numel() for p in model.module.parameters())
    dtype = str(next(model.module.parameters()).dtype).removeprefix("torch.")
    layers = d.n_encoder_layers or d.n_decoder_layers
    return (f"{label_of(model.name)}: {model.family.value}, {layers} layers, {d.n_heads} heads "
            f"({d.n_kv_heads} K/V), d_model {d.d_model}, d_head {d.d_head}, d_ff {d.d_ff}, "
            f"{parameters / 1e6:,.2f}M parameters, {dtype} on {model.device}")


def label_of(spec: str) -> str:
    """A short name for a spec (a checkpoint directory by its folder's name)."""
    return Path(spec).name if os.sep in spec else spec


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
    if cuda:
        torch.cuda.synchronize()
    start = tick()
    f()
    if cuda:
        torch.cuda.synchronize()
    return tick() - start


def measure(f, runs: int, cuda: bool) -> tuple[float, int]:
    """The median seconds (:func:`timed`) and the largest peak memory rise of ``runs`` calls."""
    times, peaks = [], []
    for _run in range(runs):
        with Peak(cuda) as p:
            times.append(timed(f, cuda))
        peaks.append(p.rise)
    return median(times), max(peaks)


def gb(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.2f} GB"


def bench_capture(spec: str, sizes, runs: int, device: str, dtype: str | None = None,
                  model=None) -> dict:
    """Capture vs plain forward, side by side; returns the traces of the sizes (by size)."""
    import torch

    if model is None:
        model = load_model(spec, device, dtype)
        if spec not in ("smollm2", "minilm"):
            print(f"  {describe(model)}", flush=True)
    spec = label_of(spec)
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
    from model.reading.blocks import head_pooled, region
    from viz.sizes import HEAD_SIDE

    name = trace.names[0]
    layer = trace.layers(name) // 2
    head = min(3, trace.n_heads - 1)
    n_q, n_k = (len(t) for t in trace.axes(name))
    exact = n_q * n_k * 4 <= EXACT_MOST

    def measured(what: str, f, digits: int = 3) -> None:
        seconds, peak = measure(f, runs, cuda)
        row(what, f"{n:,}", f"{seconds:.{digits}f}  (peak +{gb(peak)})")

    if exact:
        measured("one head, exact (s)", lambda: trace.weights(name, layer, head))
    measured(f"one head as Explore draws it, ≤{HEAD_SIDE}² cells (s)",
             lambda: head_pooled(trace, name, layer, head, HEAD_SIDE))
    rows, keys = range(max(0, n_q - ZOOM), n_q), range(max(0, n_k - ZOOM), n_k)
    measured(f"one head, exact zoom {len(rows)} rows × {len(keys)} keys (s)",
             lambda: region(trace, name, layer, head, rows, keys))
    if exact:
        measured("one layer, every head exact (s)", lambda: trace.layer_weights(name, layer), 2)
    else:
        row("one head / one layer exact", f"{n:,}",
            f"not measured: one head is {gb(n_q * n_k * 4)} float32 (Explore draws the pooled "
            f"view and zooms)")


def bench_analyses(trace, n: int, runs: int, cuda: bool = False) -> list:
    """The analyses' times and peaks; returns the last run's layer summaries."""
    import numpy as np

    import viz
    from model.analysis.rollout import rollout
    from model.analysis.statistics import head_stats, layer_summaries
    from viz.sizes import GRID_SIDE, TILE_SIDE

    name = trace.names[0]
    passes, stats, rolls, views = [], [], [], []
    peaks: dict[str, list[int]] = {"pass": [], "stats": [], "rollout": [], "view": []}

    def step(what: str, times: list, f):
        with Peak(cuda) as p:
            start = time.perf_counter()
            result = f()
            if cuda:
                import torch

                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        peaks[what].append(p.rise)
        return result

    for _run in range(runs):
        summaries = step("pass", passes,
                         lambda: layer_summaries(trace, name, tile=TILE_SIDE, grid=GRID_SIDE))
        made = summaries
        step("stats", stats, lambda made=made: head_stats(trace, name, made))
        step("rollout", rolls, lambda made=made: rollout(trace, name, summaries=made))
        step("view", views, lambda made=made: viz.model_view(
            trace, name, tiles=np.stack([s.tiles for s in made])).to_json())
    row("every head of every layer, one pass (s, wall)", f"{n:,}",
        f"{median(passes):.2f}  (peak +{gb(max(peaks['pass']))})")
    for what, values, key in (("head statistics", stats, "stats"), ("rollout", rolls, "rollout"),
                              ("model view figure", views, "view")):
        row(f"  then {what} (s, wall)", f"{n:,}", f"{median(values):.3f}  (total "
            f"{median(passes) + median(values):.2f}; peak +{gb(max(peaks[key]))})")
    return summaries


def bench_figures(trace, n: int, summaries=None) -> None:
    """Bytes of each view's figure as Plotly JSON (``summaries``: the layers' summaries at the
    sizes the pages draw, when already made)."""
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
    if summaries is None:
        summaries = layer_summaries(trace, name, tile=TILE_SIDE, grid=GRID_SIDE)
    weights, factors = head_pooled(trace, name, layer, min(3, trace.n_heads - 1), HEAD_SIDE)
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
    parser.add_argument("--long-runs", type=int, default=3,
                        help="measurements per figure above 8,192 tokens (default 3)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default=None,
                        help="auto, float32, bfloat16 or float16 (where model.load takes dtype=)")
    parser.add_argument("--model", default="smollm2",
                        help="the decoder measured at --sizes: a spec, a checkpoint directory, "
                             "or random-llama (built here, 32k positions)")
    parser.add_argument("--sizes", help="tokens, comma-separated (default 512,2048,8192; "
                                        "--quick 512,2048)")
    parser.add_argument("--long", action="store_true",
                        help="also the 32k row: random-llama at 32,768 tokens")
    parser.add_argument("--long-model", choices=sorted(RANDOM_LLAMAS), default="tiny",
                        help="the random Llama of the 32k row (default tiny: a CPU's)")
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    runs = max(5, args.runs)
    long_runs = max(1, args.long_runs)
    import app_pages.cache.getters  # noqa: F401  (the server's allocator settings, as the app runs)
    from model.device import resolve_device

    device = str(resolve_device(args.device))
    cuda = device.startswith("cuda")
    import torch

    print(f"bench.run on {device} ({torch.get_num_threads()} CPU threads), medians of {runs}"
          f" ({long_runs} above 8,192 tokens)")
    if args.sizes is not None:
        sizes = tuple(int(n) for n in args.sizes.split(",") if n.strip())
    else:
        sizes = (512, 2048) if args.quick else (512, 2048, 8192)

    def runs_at(n: int) -> int:
        return runs if n <= 8192 else long_runs

    def measure_sizes(spec: str, sizes, model=None) -> None:
        traces = {}
        for n in sizes:  # one size at a time: a long input's runs differ
            traces.update(bench_capture(spec, (n,), runs_at(n), device, args.dtype, model))
        for n in sizes[1:] if len(sizes) > 1 else sizes:
            bench_heads(traces[n], n, runs_at(n), cuda)
        summaries = {n: bench_analyses(traces[n], n, runs_at(n), cuda)
                     for n in (sizes[1:] if len(sizes) > 1 else sizes)}
        for n in sizes:
            bench_figures(traces[n], n, summaries.get(n))
        traces.clear()

    bundled = args.model == "smollm2"
    if sizes:
        model = load_model(args.model, device, args.dtype)
        print(f"  {describe(model)}", flush=True)
        measure_sizes(args.model, sizes, model)
        del model
        if bundled:
            bench_capture("minilm", (128, 512), runs, device, args.dtype)
    if bundled and not cuda and 2048 in sizes:  # the app's own reruns and the browser run on
        bench_rerun(2048, runs)                 # this machine's CPU
        if not args.quick:
            bench_browser((512, 2048), runs)
    if args.long:
        dtype = args.dtype if args.dtype not in (None, "auto") else \
            ("bfloat16" if cuda else "float32")
        path = random_llama_path(args.long_model, dtype, device if cuda else "cpu")
        print(f"\nthe 32k row: {RANDOM_LLAMA} ({args.long_model}), medians of {long_runs}")
        model = load_model(str(path), device, args.dtype)
        print(f"  {describe(model)}", flush=True)
        measure_sizes(str(path), (LONG,), model)
        del model
    if args.json:
        args.json.write_text(json.dumps(ROWS, indent=1, ensure_ascii=False))
    print("\n| measure | tokens | median |\n|---|---:|---|")
    for what, size, value in ROWS:
        print(f"| {what.strip()} | {size} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
