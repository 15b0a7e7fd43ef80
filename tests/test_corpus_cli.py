"""``python -m model corpus``: the table from a file, in this process and on a local Ray
cluster, and clear errors for bad arguments and files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from model.__main__ import main
from model.analysis.corpus import Span
from model.corpus import run_corpus

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
                   "--column", "french", "--out", str(out)])
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
