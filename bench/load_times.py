"""Load times of the bundled pretrained models.

    .venv/bin/python bench/load_times.py

smollm2 is measured twice in fresh processes: first with an empty cache directory (the GGUF
file is dequantised and written as safetensors), then again (read from that cache). minilm is
read straight from its package. Each load runs in its own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _one(spec: str) -> float:
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    from model import load

    load(spec, device="cpu")
    return time.perf_counter() - started


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(_one(sys.argv[2])))
        return 0
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ATTENTION_EXPLORER_CACHE": cache}
        rows = [("smollm2", "first load (empty cache: GGUF dequantised, cached)"),
                ("smollm2", "second load (from the cache)"),
                ("minilm", "load")]
        for spec, what in rows:
            out = subprocess.run([sys.executable, __file__, "--one", spec], env=env,
                                 capture_output=True, text=True, check=True)
            seconds = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{spec:8s} {seconds:6.1f} s  {what} (imports included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
