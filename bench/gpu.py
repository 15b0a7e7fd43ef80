"""The steps of ``bench/gpu.sh``, one process each, so that each runs under its own time limit.

    .venv/bin/python -m bench.gpu build --size 1b --device cuda --dtype bfloat16
    .venv/bin/python -m bench.gpu capture --size 1b --device cuda --dtype bfloat16 \\
        --sizes 2048,8192,32768 --head-at 32768 --rows out/bench-gpu/rows.jsonl
    .venv/bin/python -m bench.gpu corpus --models minilm,smollm2 --device cuda --dtype bfloat16
    .venv/bin/python -m bench.gpu table --rows out/bench-gpu/rows.jsonl

- ``build``: the random Llama-family checkpoint of ``--size`` (``bench.run.RANDOM_LLAMAS``: tiny,
  or 1b, Llama-3.2-1B's shape, with 32,768 positions), its weights made on ``--device`` in
  ``--dtype`` directly and saved under ``out/bench-models/`` (``$BENCH_MODELS``); reused when
  built before. No hub is asked for anything.
- ``capture``: that checkpoint loaded (in ``--dtype`` where ``model.load`` takes ``dtype=``,
  else float32), then at each of ``--sizes`` the capture against the plain forward pass
  (``bench.run.bench_capture``: medians of ``--runs``, peak memory of each: on CUDA
  ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``, wall seconds after a
  synchronise), and at ``--head-at`` one head: the pooled view Explore draws and an exact zoom
  (``bench.run.bench_heads``). A size that would start after ``--until`` (a Unix time) is
  skipped with "skipped: over time".
- ``corpus``: the corpus engine's sentences per second (``corpus_table``, batched, the sentences
  of ``bench/corpus.py``) for each of ``--models`` (``random-llama`` is the ``--size``
  checkpoint).
- ``table``: the rows every step appended to ``--rows`` (one JSON list a line), as one table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import run as bench_run  # noqa: E402  (after the path: run as a script too)

OVER_TIME = "skipped: over time"


def _device(name: str) -> str:
    """The device asked for, checked (never a silent fall back to the CPU)."""
    from model.device import resolve_device

    return str(resolve_device(name))


def _dtype(name: str | None, device: str) -> str:
    """``auto`` as the device runs it best (bfloat16 on CUDA, float32 on the CPU)."""
    if name in (None, "", "auto"):
        return "bfloat16" if device.startswith("cuda") else "float32"
    return name


def _rows(path: Path | None) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        bench_run.ROWS_FILE = path


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def build(args) -> int:
    device = _device(args.device)
    dtype = _dtype(args.dtype, device)
    _rows(args.rows)
    start = time.perf_counter()
    path = bench_run.random_llama_path(args.size, dtype, device, args.positions, args.models_dir)
    _synchronize(device)
    bench_run.row(f"random-llama-{args.size} ({args.positions:,} positions): built or found, "
                  f"{dtype} on {device} (s)", "", f"{time.perf_counter() - start:.1f}")
    print(f"  {path}")
    return 0


def capture(args) -> int:
    import torch

    import app_pages.cache.getters  # noqa: F401  (the server's allocator settings, as the app runs)

    device = _device(args.device)
    dtype = _dtype(args.dtype, device)
    cuda = device.startswith("cuda")
    _rows(args.rows)
    path = bench_run.random_llama_path(args.size, dtype, device, args.positions, args.models_dir)
    start = time.perf_counter()
    model = bench_run.load_model(str(path), device, dtype)
    _synchronize(device)
    print(f"  {bench_run.describe(model)}; loaded in {time.perf_counter() - start:.1f} s",
          flush=True)
    if cuda:
        print(f"  {torch.cuda.get_device_name(model.device)}, torch {torch.__version__}, "
              f"CUDA {torch.version.cuda}", flush=True)
    label = f"random-llama-{args.size}"
    sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    for n in sizes:
        if args.until and time.time() > args.until:
            bench_run.row(f"{label}: capture / plain forward", f"{n:,}", OVER_TIME)
            continue
        traces = bench_run.bench_capture(label, (n,), args.runs, device, dtype, model)
        if n == args.head_at:
            if args.until and time.time() > args.until:
                bench_run.row("one head (pooled view, exact zoom)", f"{n:,}", OVER_TIME)
            else:
                bench_run.bench_heads(traces[n], n, args.runs, cuda)
        traces.clear()
        if cuda:
            torch.cuda.empty_cache()
    return 0


def corpus(args) -> int:
    import app_pages.cache.getters  # noqa: F401
    from bench.corpus import sentences
    from model.corpus.engine import corpus_table

    device = _device(args.device)
    _rows(args.rows)
    texts = sentences(args.sentences)
    for spec in args.models.split(","):
        if args.until and time.time() > args.until:
            bench_run.row(f"corpus engine, {spec}: sentences/s", f"{len(texts):,}", OVER_TIME)
            continue
        if spec == bench_run.RANDOM_LLAMA:
            spec = str(bench_run.random_llama_path(args.size, _dtype(args.dtype, device),
                                                   device, args.positions, args.models_dir))
        model = bench_run.load_model(spec, device, args.dtype)
        print(f"  {bench_run.describe(model)}", flush=True)
        corpus_table(model, texts[:8], batch_size=4)  # warm up
        seconds = []
        for _run in range(args.runs):
            _synchronize(device)
            begin = time.perf_counter()
            corpus_table(model, texts, batch_size=args.batch_size)
            _synchronize(device)
            seconds.append(time.perf_counter() - begin)
        t = statistics.median(seconds)
        bench_run.row(f"corpus engine, {bench_run.label_of(spec)}: sentences/s "
                      f"(batch {args.batch_size}, wall)", f"{len(texts):,}",
                      f"{len(texts) / t:.1f}  ({t:.2f} s, median of {args.runs})")
        del model
    return 0


def table(args) -> int:
    rows = []
    if args.rows.exists():
        for line in args.rows.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    if args.title:
        print(f"\n{args.title}")
    print("\n| measure | tokens | value |\n|---|---:|---|")
    for what, size, value in rows:
        print(f"| {what.strip()} | {size} | {value} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = parser.add_subparsers(dest="step", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--device", default="auto", help="cuda, cpu or auto")
    common.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")
    common.add_argument("--size", choices=sorted(bench_run.RANDOM_LLAMAS), default="tiny",
                        help="the random Llama (tiny, or 1b: Llama-3.2-1B's shape)")
    common.add_argument("--positions", type=int, default=bench_run.LONG,
                        help="its position table")
    common.add_argument("--models-dir", type=Path, help="where checkpoints are built "
                                                        "(default out/bench-models)")
    common.add_argument("--rows", type=Path, help="append each row here (JSON lines)")
    common.add_argument("--until", type=float, default=0.0,
                        help="a Unix time: what would start after it is skipped")
    common.add_argument("--runs", type=int, default=3)
    steps.add_parser("build", parents=[common])
    p = steps.add_parser("capture", parents=[common])
    p.add_argument("--sizes", default="2048,8192,32768", help="tokens, comma-separated")
    p.add_argument("--head-at", type=int, default=bench_run.LONG,
                   help="the size at which one head is measured")
    p = steps.add_parser("corpus", parents=[common])
    p.add_argument("--models", default="minilm,smollm2")
    p.add_argument("--sentences", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=32)
    p = steps.add_parser("table")
    p.add_argument("--rows", type=Path, required=True)
    p.add_argument("--title", default="")
    args = parser.parse_args(argv)
    return {"build": build, "capture": capture, "corpus": corpus, "table": table}[args.step](args)


if __name__ == "__main__":
    sys.exit(main())
