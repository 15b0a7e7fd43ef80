"""bench/gpu.sh and its Python steps (bench/gpu.py) work on the CPU at tiny sizes: a random
Llama built here, captured at 64 tokens, one head pooled and zoomed, the corpus engine, the
table; the script parses, and a step that cannot start or outlasts its limit says "skipped:
over time" instead of hanging."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SCRIPT = ROOT / "bench" / "gpu.sh"


def test_gpu_script_parses_as_bash():
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def driver(monkeypatch):
    """bench.gpu with bench.run's module state (its rows) restored after the test."""
    from bench import gpu
    from bench import run as bench_run

    monkeypatch.setattr(bench_run, "ROWS", [])
    monkeypatch.setattr(bench_run, "ROWS_FILE", None)
    return gpu


def test_driver_steps_print_every_row_for_a_tiny_model_on_the_cpu(driver, tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    common = ["--device", "cpu", "--dtype", "float32", "--size", "tiny", "--positions", "128",
              "--models-dir", str(tmp_path / "models"), "--rows", str(rows), "--runs", "1"]
    assert driver.main(["build", *common]) == 0
    assert driver.main(["capture", *common, "--sizes", "32,64", "--head-at", "64"]) == 0
    assert driver.main(["corpus", *common, "--models", "random-llama", "--sentences", "4",
                        "--batch-size", "2"]) == 0
    capsys.readouterr()
    assert driver.main(["table", "--rows", str(rows), "--title", "tiny"]) == 0
    table = capsys.readouterr().out
    lines = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    measured = {(what, size) for what, size, _value in lines}
    for what, size in [("random-llama-tiny: capture / plain forward (CPU s)", "32"),
                       ("random-llama-tiny: capture / plain forward (CPU s)", "64"),
                       ("random-llama-tiny: peak memory rise, capture / plain", "64"),
                       ("one head, exact (s)", "64"),
                       ("one head as Explore draws it, ≤256² cells (s)", "64"),
                       ("one head, exact zoom 64 rows × 64 keys (s)", "64")]:
        assert (what, size) in measured, (what, size, measured)
        assert f"| {what} | {size} |" in table
    assert any(what.startswith("random-llama-tiny (128 positions): built or found")
               for what, _size in measured), measured
    corpus = [value for what, _size, value in lines if what.startswith("corpus engine")]
    assert len(corpus) == 1 and float(corpus[0].split()[0]) > 0, corpus
    assert "skipped" not in table


def test_driver_skips_what_would_start_past_its_deadline(driver, tmp_path):
    rows = tmp_path / "rows.jsonl"
    assert driver.main(["capture", "--device", "cpu", "--size", "tiny", "--positions", "128",
                        "--models-dir", str(tmp_path / "models"), "--rows", str(rows),
                        "--sizes", "64", "--head-at", "64", "--until", "1"]) == 0
    lines = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    assert lines == [["random-llama-tiny: capture / plain forward", "64", driver.OVER_TIME]]


def _script(tmp_path, budget: int, python: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BENCH_BUDGET": str(budget), "BENCH_PYTHON": python,
           "BENCH_OUT": str(tmp_path / "out"), "BENCH_MODELS": str(tmp_path / "models")}
    return subprocess.run(["bash", str(SCRIPT), "--device", "cpu"], capture_output=True,
                          text=True, env=env, timeout=60)


def test_script_without_time_left_skips_every_step_and_still_prints_the_table(tmp_path):
    result = _script(tmp_path, 0, sys.executable)
    assert result.returncode == 0, result.stderr
    table = result.stdout.split("| measure | tokens | value |")[-1]
    for step in ("build the random Llama (tiny)", "capture / plain forward (512,2048,8192), "
                 "one head at 8192", "corpus engine (minilm)", "corpus engine (smollm2)"):
        assert f"| {step} |  | skipped: over time (not started) |" in table, result.stdout
    assert (tmp_path / "out" / "table-cpu.md").read_text(encoding="utf-8").strip()


def test_script_stops_a_step_at_its_limit(tmp_path):
    """A step that never ends is stopped when the budget's time is up, and says so."""
    fake = tmp_path / "python"
    fake.write_text(f'#!/usr/bin/env bash\ncase " $* " in *" table "*) exec {sys.executable} '
                    f'"$@" ;; esac\nexec tail -f /dev/null\n')
    fake.chmod(0o755)
    result = _script(tmp_path, 16, str(fake))  # 10 s kept for the table: 5 or 6 s for the build
    assert result.returncode == 0, result.stderr
    assert re.search(r"\| build the random Llama \(tiny\) \|  \| skipped: over time \(stopped "
                     r"at [56]s", result.stdout), result.stdout
    assert "| corpus engine (smollm2) |  | skipped: over time (not started) |" in result.stdout
