"""Peak memory of capturing smollm2's attention on a 2,048-token input vs a plain forward pass.

    .venv/bin/python bench/capture_memory.py [--tokens 2048] [--device auto]

Each measurement runs in a fresh process: load the model, run a short warm-up, then sample the
process's resident memory every 2 ms (CPU) or read torch's peak allocation (CUDA) during one
call. Printed: the peak during the call, and its rise over the memory held before the call
(the model's weights). For reference, storing every weight as float32 would take
30 layers × 9 heads × 2048² × 4 B = 4.5 GB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {
    "plain": "plain forward, full logits (what a user's model(**inputs) does)",
    "plain-last": "plain forward, last position's logits only (as the trace runs it)",
    "capture": "trace: capture every layer's attention (lazy, exact)",
    "capture+head": "trace, then one 2048x2048 head computed from it",
}


def _measure(mode: str, n_tokens: int, device: str) -> dict:
    sys.path.insert(0, str(ROOT))
    import psutil
    import torch

    from model import load

    model = load("smollm2", device=device)
    text = " ".join(["The cat chased the mouse because it was hungry, then sat on the mat."] * 400)
    ids = model.tokenizer(text)["input_ids"][:n_tokens]
    assert len(ids) == n_tokens
    inputs = torch.tensor([ids], device=model.device)
    with torch.inference_mode():
        model.model(inputs[:, :16])  # warm-up
    cuda = model.device.type == "cuda"
    process = psutil.Process()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    before_rss = process.memory_info().rss
    peak = [before_rss]
    running = True

    def sample():
        while running:
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    with torch.inference_mode():
        if mode == "plain":
            model.model(inputs, use_cache=False)
        elif mode == "plain-last":
            model.model(inputs, use_cache=False, logits_to_keep=1)
        else:
            trace = model.trace_ids(ids)
            if mode == "capture+head":
                trace.weights("decoder.self", 29, 8)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    running = False
    sampler.join()
    result = {"mode": mode, "seconds": round(seconds, 2),
              "rss_before_mb": before_rss / 2**20, "rss_peak_mb": peak[0] / 2**20}
    if cuda:
        result["cuda_before_mb"] = before / 2**20
        result["cuda_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(args.one, args.tokens, args.device)))
        return 0
    results = {}
    for mode in MODES:
        out = subprocess.run([sys.executable, __file__, "--one", mode, "--tokens",
                              str(args.tokens), "--device", args.device],
                             capture_output=True, text=True, check=True)
        results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    key = "cuda" if "cuda_peak_mb" in results["plain"] else "rss"
    print(f"smollm2, {args.tokens} tokens, peak {'GPU allocation' if key == 'cuda' else 'RSS'}:")
    base = results["plain"][f"{key}_peak_mb"]
    for mode, r in results.items():
        rise = r[f"{key}_peak_mb"] - r[f"{key}_before_mb"]
        print(f"  {mode:13s} peak {r[f'{key}_peak_mb']:8.0f} MB  (+{rise:6.0f} MB over the "
              f"loaded model; {r[f'{key}_peak_mb'] / base:5.2f}x plain)  {r['seconds']:6.2f} s"
              f"  {MODES[mode]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
