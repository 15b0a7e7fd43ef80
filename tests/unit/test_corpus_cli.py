"""``python -m model corpus``: the table from a file, in this process and on a local Ray
cluster, and clear errors for bad arguments and files."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import model
import model.corpus.engine
from model.__main__ import main
from model.corpus.engine import run_corpus
from model.corpus.statistics import Span

ROOT = Path(__file__).resolve().parents[2]

LINES = ["The cat sat on the mat because it was tired.", "A dog slept.", "",
         "The cat chased the mouse because it was hungry.", "it", "A dog slept under the table."]


@pytest.fixture()
def sentences_file(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def test_the_corpus_command_writes_one_row_per_sentence_layer_and_head(
        tiny_checkpoints, sentences_file, tmp_path, capsys):
    out = tmp_path / "table.parquet"
    status = main(["corpus", "--model", str(tiny_checkpoints["llama"]), "--input",
                   str(sentences_file), "--out", str(out), "--queries", "it", "--keys",
                   "cat|dog|mouse", "--keys-before", "--batch-size", "2"])
    assert status == 0, capsys.readouterr().err
    table = pd.read_parquet(out)
    assert list(table.columns) == ["sentence", "text", "kind", "layer", "head", "queries",
                                   "entropy", "distance", "first_token", "previous_token",
                                   "self", "span"]
    assert len(table) == 5 * 2 * 4  # non-blank sentences × layers × heads
    assert table["text"].iloc[0] == LINES[0]
    assert "5 sentences, 40 rows" in capsys.readouterr().out
    csv_out = tmp_path / "table.csv"
    assert main(["corpus", "--model", str(tiny_checkpoints["llama"]), "--input",
                 str(sentences_file), "--out", str(csv_out)]) == 0
    from_csv = pd.read_csv(csv_out)
    np.testing.assert_allclose(from_csv["entropy"], table["entropy"], atol=1e-5)


def test_the_corpus_command_reads_a_chosen_column(tiny_checkpoints, tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_text('id,english\n1,"The cat sat, quietly."\n2,A dog slept.\n', encoding="utf-8")
    out = tmp_path / "t.csv"
    assert main(["corpus", "--model", str(tiny_checkpoints["bert"]), "--input", str(path),
                 "--column", "english", "--out", str(out)]) == 0
    assert pd.read_csv(out)["text"].unique().tolist() == ["The cat sat, quietly.",
                                                          "A dog slept."]
    status = main(["corpus", "--model", str(tiny_checkpoints["bert"]), "--input", str(path),
                   "--column", "french", "--out", str(tmp_path / "u.csv")])
    err = capsys.readouterr().err
    assert status == 2 and "no column 'french'" in err and "'english'" in err


@pytest.mark.parametrize("args, message", [
    (["--out", "t.npz"], "--out must end in .parquet or .csv"),
    (["--queries", "it"], "needs both --queries and --keys"),
    (["--queries", "(it", "--keys", "cat"], "not a regular expression"),
    (["--engine", "spark"], "invalid choice"),
])
def test_bad_corpus_arguments_give_one_error_line(tiny_checkpoints, sentences_file, tmp_path,
                                                  capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    base = ["corpus", "--model", str(tiny_checkpoints["bert"]), "--input", str(sentences_file),
            "--out", "t.csv"]
    assert main(base + args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and message in err[-1]


@pytest.mark.slow
def test_a_local_ray_cluster_gives_the_same_table_as_this_process(tiny_checkpoints):
    ray = pytest.importorskip("ray")
    sentences = [line for line in LINES if line] * 3
    sentences.insert(4, "the cat sat " * 60)  # longer than the model reads: left out
    spec = str(tiny_checkpoints["bart"])
    span = Span("it", "cat|dog|mouse", before=True)
    local = run_corpus(spec, sentences, device="cpu", batch_size=4, span=span)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        seen = []
        on_ray = run_corpus(spec, sentences, engine="ray", device="cpu", batch_size=4,
                            span=span, workers=2, progress=lambda d, t: seen.append((d, t)))
    finally:
        ray.shutdown()
    assert seen[-1] == (len(sentences), len(sentences))
    assert list(on_ray.columns) == list(local.columns)
    for column in local.columns:
        if local[column].dtype.kind == "f":
            np.testing.assert_allclose(on_ray[column], local[column], atol=1e-5, rtol=0,
                                       equal_nan=True, err_msg=column)
        else:
            assert on_ray[column].tolist() == local[column].tolist(), column
    assert set(local["kind"]) == {"encoder.self", "decoder.self", "decoder.cross"}
    assert [i for i, _m in local.attrs["skipped"]] == [4]
    assert on_ray.attrs["skipped"] == local.attrs["skipped"]
    assert "reads at most 128" in local.attrs["skipped"][0][1]
    assert 4 not in set(on_ray["sentence"])


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _must_not_run(*args, **kwargs):
    raise AssertionError("the run started")


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_unreachable_ray_address_fails_within_seconds_with_one_line(
        sentences_file, tmp_path, capsys, monkeypatch, scheme):
    if scheme:
        pytest.importorskip("grpc")  # without Ray Client the message names it (test below)
    monkeypatch.setattr(model.corpus.engine, "run_corpus", _must_not_run)
    address = f"{scheme}127.0.0.1:{_free_port()}"
    started = time.monotonic()
    status = main(["corpus", "--engine", "ray", "--address", address, "--model", "own-random",
                   "--input", str(sentences_file), "--out", str(tmp_path / "t.csv")])
    assert time.monotonic() - started < 15
    assert status == 2
    assert _one_error_line(capsys).startswith(f"error: cannot reach the Ray cluster at {address}")
    assert not (tmp_path / "t.csv").exists()


def test_an_unreachable_ray_address_fails_fast_from_python_too(monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    started = time.monotonic()
    with pytest.raises(ValueError, match="cannot reach the Ray cluster at 127.0.0.1:"):
        run_corpus("own-random", ["The cat sat."], engine="ray",
                   address=f"127.0.0.1:{_free_port()}")
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("address, message", [
    ("127.0.0.1:x", "is not HOST:PORT or ray://HOST:PORT"),
    ("ray://127.0.0.1:70000", "is not HOST:PORT or ray://HOST:PORT"),
    ("nosuchhost.invalid:6379", "cannot reach the Ray cluster at nosuchhost.invalid:6379"),
])
def test_a_malformed_or_unknown_ray_address_is_one_line(sentences_file, tmp_path, capsys,
                                                         monkeypatch, address, message):
    monkeypatch.setattr(model.corpus.engine, "run_corpus", _must_not_run)
    assert main(["corpus", "--engine", "ray", "--address", address, "--model", "own-random",
                 "--input", str(sentences_file), "--out", str(tmp_path / "t.csv")]) == 2
    assert message in _one_error_line(capsys)


def test_a_missing_ray_client_is_one_line_naming_its_package(sentences_file, tmp_path, capsys,
                                                              monkeypatch):
    monkeypatch.setitem(sys.modules, "grpc", None)  # import grpc fails, as without ray[client]
    monkeypatch.setattr(model.corpus.engine, "run_corpus", _must_not_run)
    assert main(["corpus", "--engine", "ray", "--address", f"ray://127.0.0.1:{_free_port()}",
                 "--model", "own-random", "--input", str(sentences_file), "--out",
                 str(tmp_path / "t.csv")]) == 2
    assert "pip install 'ray[client]'" in _one_error_line(capsys)


def test_auto_and_no_address_are_left_to_ray():
    from model.corpus.engine import check_address, cluster_endpoint

    for address in (None, "", "auto", "local", " auto "):
        assert cluster_endpoint(address) is None
        check_address(address)  # nothing to reach before ray.init
    assert cluster_endpoint("ray://head.example:10001") == ("head.example", 10001)
    assert cluster_endpoint("ray://head.example") == ("head.example", 10001)
    assert cluster_endpoint("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert cluster_endpoint("[::1]:6380") == ("::1", 6380)


@pytest.mark.parametrize("args", [["--workers", "0"], ["--workers", "-3"],
                                  ["--batch-size", "0"], ["--batch-size", "-1"],
                                  ["--workers", "two"]])
def test_workers_and_batch_size_must_be_positive_whole_numbers(sentences_file, tmp_path,
                                                               capsys, monkeypatch, args):
    monkeypatch.setattr(model.corpus.engine, "run_corpus", _must_not_run)
    assert main(["corpus", "--model", "own-random", "--input", str(sentences_file), "--out",
                 str(tmp_path / "t.csv"), *args]) == 2
    line = _one_error_line(capsys)
    assert f"argument {args[0]}:" in line
    assert "must be at least 1" in line or "not a whole number" in line


@pytest.mark.parametrize("name, value", [("batch_size", 0), ("workers", -3)])
def test_run_corpus_refuses_non_positive_sizes_before_loading(monkeypatch, name, value):
    monkeypatch.setattr(model, "load", _must_not_run)
    with pytest.raises(ValueError, match=f"{name} must be a whole number of at least 1"):
        run_corpus("own-random", ["The cat sat."], **{name: value})


def _unwritable(tmp_path: Path, case: str) -> tuple[str, str]:
    """An --out that cannot be written, and what its message says."""
    (tmp_path / "DIR.csv").mkdir()
    (tmp_path / "file.txt").write_text("x")
    return {"a folder": (str(tmp_path / "DIR.csv"), "is a folder"),
            "a missing folder": (str(tmp_path / "nope" / "t.csv"), "does not exist"),
            "inside a file": (str(tmp_path / "file.txt" / "t.csv"), "is not a folder"),
            "not writable": ("/proc/t.csv", "cannot write --out /proc/t.csv")}[case]


@pytest.mark.parametrize("case", ["a folder", "a missing folder", "inside a file",
                                  "not writable"])
def test_an_output_that_cannot_be_written_is_refused_before_anything_runs(
        sentences_file, tmp_path, capsys, monkeypatch, case):
    if case == "not writable" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc, where no one may make a file")
    out, message = _unwritable(tmp_path, case)
    monkeypatch.setattr(model.corpus.engine, "run_corpus", _must_not_run)
    monkeypatch.setattr(model, "load", _must_not_run)
    assert main(["corpus", "--model", "own-random", "--input", str(sentences_file), "--out",
                 out]) == 2
    assert message in _one_error_line(capsys)


def test_an_existing_table_is_kept_unless_forced(tiny_checkpoints, sentences_file, tmp_path,
                                                 capsys, monkeypatch):
    out = tmp_path / "t.csv"
    out.write_text("keep me\n")
    base = ["corpus", "--model", str(tiny_checkpoints["bert"]), "--input", str(sentences_file),
            "--out", str(out)]
    with monkeypatch.context() as patched:
        patched.setattr(model.corpus.engine, "run_corpus", _must_not_run)
        assert main(base) == 2
    line = _one_error_line(capsys)
    assert "already exists" in line and "--force" in line
    assert out.read_text() == "keep me\n"
    assert main(base + ["--force"]) == 0
    assert len(pd.read_csv(out)) == 5 * 2 * 4


def test_a_run_that_fails_before_it_starts_prints_one_line_and_no_progress_bar(
        sentences_file, tmp_path, capsys):
    assert main(["corpus", "--model", str(tmp_path / "no" / "checkpoint"), "--input",
                 str(sentences_file), "--out", str(tmp_path / "t.csv")]) == 2
    assert "no checkpoint folder" in _one_error_line(capsys)


def test_the_help_explains_force(capsys):
    assert main(["corpus", "--help"]) == 0
    assert "--force" in capsys.readouterr().out


SERVE = """
import sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 2, "include_dashboard": False, "ray_client_server_port": int(sys.argv[1])})
print("ready", flush=True)
sys.stdin.read()  # until the test closes it
cluster.shutdown()
"""


@pytest.mark.slow
def test_a_ray_client_address_gives_the_same_table_as_this_process(tiny_checkpoints,
                                                                   sentences_file, tmp_path):
    # docs/corpus.md's --address ray://HOST:10001, against a cluster of its own with a client server
    pytest.importorskip("ray")
    pytest.importorskip("grpc")
    spec = str(tiny_checkpoints["llama"])
    local = tmp_path / "local.csv"
    assert main(["corpus", "--model", spec, "--input", str(sentences_file), "--out",
                 str(local), "--device", "cpu"]) == 0
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    # Ray's client proxy gives a client's server 30 s to come up (it unpacks the 20 MB model
    # package first): on a busy 2-core machine that failed once in a full suite. Wait longer.
    env["RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S"] = "180"
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(port)], cwd=ROOT, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        out = tmp_path / "client.csv"
        for _attempt in range(2):
            result = subprocess.run(
                [sys.executable, "-m", "model", "corpus", "--engine", "ray", "--address",
                 f"ray://127.0.0.1:{port}", "--model", spec, "--input", str(sentences_file),
                 "--out", str(out), "--device", "cpu", "--batch-size", "2", "--workers", "1"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            # Ray's proxy forks the client's own server while gRPC threads run; under a full
            # suite's load that child once died at birth ("Initialization failure from
            # server", psutil.ZombieProcess), before any of this code ran: one more start
            if "Initialization failure from server" not in result.stderr:
                break
    finally:
        server.stdin.close()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert result.returncode == 0, result.stderr
    assert "5 sentences, 40 rows (ray engine)" in result.stdout
    expected, got = pd.read_csv(local), pd.read_csv(out)
    assert got["text"].tolist() == expected["text"].tolist()
    np.testing.assert_allclose(got["entropy"], expected["entropy"], atol=1e-5)
