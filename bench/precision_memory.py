"""What a model's precision costs in memory: a random ~1e9-parameter Llama (bench/local_models.py,
saved once in bfloat16) loaded with ``model.load(path, device="cpu", dtype=...)`` in float32 and
in bfloat16, each in a fresh process, measuring the parameter bytes and the peak rise of the
process's resident memory during the load (the probe pass included).

    .venv/bin/python -m bench.precision_memory [--dir DIR] [--layers 22] [--d-model 2048] ...

The checkpoint is built in DIR (default: a temporary folder, removed after) unless DIR already
holds one of the same config. Prints one line per precision and the ratios; ``--json`` prints
them as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# TinyLlama-1.1B's shape (d_model 2048, 32 heads over 4 K/V heads, d_ff 5632, 22 layers) with a
# byte-level vocabulary of a few hundred tokens: 0.99e9 parameters, 2 GB in bfloat16.
SIZES = dict(layers=22, d_model=2048, d_ff=5632, heads=32, kv_heads=4)


def build(path: Path | str, **sizes) -> Path:
    """The bfloat16 checkpoint under ``path`` (built once; reused when its config matches)."""
    sys.path.insert(0, str(ROOT))
    from bench.local_models import random_llama

    return random_llama(path, dtype="bfloat16", positions=2048, **{**SIZES, **sizes})


def _status_kb(field: str) -> int:
    """A ``/proc/self/status`` field in kB (``VmHWM``: peak resident memory; ``VmRSS``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> None:
    """Start the peak resident memory (VmHWM) from now (Linux: write 5 to clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def measure_here(path: str, dtype: str) -> dict:
    """Load ``path`` in ``dtype`` in this process; its figures (bytes)."""
    import time

    import torch  # noqa: F401 - imported before the baseline, as every load needs it

    import model.hf.adapter  # noqa: F401 - transformers too
    from model import load

    _reset_peak()
    before = _status_kb("VmRSS") * 1024
    start = time.perf_counter()
    loaded = load(path, device="cpu", dtype=dtype)
    seconds = time.perf_counter() - start
    peak = _status_kb("VmHWM") * 1024
    after = _status_kb("VmRSS") * 1024
    parameters = list(loaded.module.parameters())
    return {"dtype": loaded.dtype, "parameters": sum(p.numel() for p in parameters),
            "parameter_bytes": sum(p.numel() * p.element_size() for p in parameters),
            "peak_rise": peak - before, "resident_rise": after - before,
            "load_seconds": round(seconds, 1)}


def measure(path: Path | str, dtype: str, timeout: float = 600) -> dict:
    """:func:`measure_here` in a fresh process (so that nothing loaded before counts)."""
    done = subprocess.run([sys.executable, "-m", "bench.precision_memory", "--measure",
                           str(path), dtype], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(path: Path | str) -> dict:
    """Both precisions' figures and the bfloat16 / float32 ratios."""
    figures = {dtype: measure(path, dtype) for dtype in ("float32", "bfloat16")}
    full, half = figures["float32"], figures["bfloat16"]
    return {**figures, "ratio_parameter_bytes": half["parameter_bytes"] / full["parameter_bytes"],
            "ratio_peak_rise": half["peak_rise"] / full["peak_rise"],
            "ratio_resident_rise": half["resident_rise"] / full["resident_rise"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", nargs=2, metavar=("PATH", "DTYPE"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to build (or find) the checkpoint; default a temporary one")
    for name, value in SIZES.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=value)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_here(*args.measure)))
        return
    sizes = {name: getattr(args, name) for name in SIZES}
    if args.dir is not None:
        result = compare(build(args.dir, **sizes))
    else:
        with tempfile.TemporaryDirectory() as scratch:
            result = compare(build(Path(scratch) / "llama", **sizes))
    if args.json:
        print(json.dumps(result, indent=1))
        return
    gb = 1e9
    for dtype in ("float32", "bfloat16"):
        f = result[dtype]
        print(f"{dtype:9s} {f['parameters'] / 1e9:.3f}e9 parameters, "
              f"{f['parameter_bytes'] / gb:.2f} GB of parameters, peak RSS rise "
              f"{f['peak_rise'] / gb:.2f} GB, resident after "
              f"{f['resident_rise'] / gb:.2f} GB, load {f['load_seconds']} s")
    print(f"bfloat16 / float32: parameters {result['ratio_parameter_bytes']:.3f}, peak RSS rise "
          f"{result['ratio_peak_rise']:.3f}, resident {result['ratio_resident_rise']:.3f}")


if __name__ == "__main__":
    main()
