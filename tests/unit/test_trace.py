"""The AttentionTrace contract, the Python API and the export format."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from model import AttentionTrace, load
from tests.helpers import ROOT, SEED_SENTENCE


def test_api_traces_the_seed_sentence_with_six_source_tokens(seed_trace):
    assert seed_trace.names == ("encoder.self", "decoder.self", "decoder.cross")
    assert list(seed_trace.source_tokens) == ["The", "cat", "sat", "on", "the", "mat"]
    assert list(seed_trace.target_tokens) == ["<bos>", "The", "cat", "sat", "on", "the", "mat"]
    # "The" and "the" share an id (case-insensitive vocabulary) but stay distinct positions
    assert seed_trace.source_ids[0] == seed_trace.source_ids[4]
    w = seed_trace.weights("decoder.cross", layer=3, head=2)
    assert w.dtype == np.float32 and w.shape == (7, 6)
    assert seed_trace.n_layers == 6 and seed_trace.n_heads == 8 and seed_trace.n_kv_heads == 8


def test_own_random_is_the_same_model_at_every_load(own_random, seed_trace):
    again = load("own-random", device="cpu").trace(SEED_SENTENCE)
    for name in seed_trace.names:
        np.testing.assert_array_equal(again.stack(name), seed_trace.stack(name))


def test_invalid_layer_head_or_name_raise_clear_errors(seed_trace):
    with pytest.raises(ValueError, match="layer 6 is out of range 0..5"):
        seed_trace.weights("encoder.self", 6, 0)
    with pytest.raises(ValueError, match="head -1 is out of range"):
        seed_trace.weights("encoder.self", 0, -1)
    with pytest.raises(ValueError, match="not in this encoder-decoder trace"):
        seed_trace.weights("encoder.cross", 0, 0)


def test_trace_validates_token_counts_against_array_shapes():
    weights = np.full((1, 2, 3, 3), 1 / 3, dtype=np.float32)
    with pytest.raises(ValueError, match="match the tokens"):
        AttentionTrace(model="m", family="decoder-only", attention={"decoder.self": weights},
                       n_heads=2, n_kv_heads=2, tokens=["a", "b"], ids=[1, 2])
    with pytest.raises(ValueError, match="holds"):
        AttentionTrace(model="m", family="decoder-only", attention={"encoder.self": weights},
                       n_heads=2, n_kv_heads=2, tokens=["a", "b", "c"], ids=[1, 2, 3])
    with pytest.raises(ValueError, match="must divide"):
        AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                       n_heads=2, n_kv_heads=3, tokens=["a", "b", "c"], ids=[1, 2, 3])


def test_trace_is_frozen_and_its_arrays_read_only(seed_trace):
    with pytest.raises(AttributeError):
        seed_trace.model = "other"
    with pytest.raises(ValueError):
        seed_trace.stack("encoder.self")[0, 0, 0, 0] = 1.0


def test_mask_of_a_sliding_window_trace_forbids_far_keys():
    n = 5
    allowed = np.tril(np.ones((n, n), dtype=bool)) & ~np.tril(np.ones((n, n), dtype=bool), k=-2)
    weights = allowed / allowed.sum(-1, keepdims=True)
    trace = AttentionTrace(model="m", family="decoder-only",
                           attention={"decoder.self": weights[None, None].astype(np.float32)},
                           n_heads=1, n_kv_heads=1, tokens=list("abcde"), ids=range(5),
                           meta={"sliding_window": 2})
    np.testing.assert_array_equal(trace.mask("decoder.self"), allowed)


def test_kv_head_groups_consecutive_query_heads():
    weights = np.full((1, 4, 2, 2), 0.5, dtype=np.float32)
    trace = AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                           n_heads=4, n_kv_heads=2, tokens=["a", "b"], ids=[1, 2])
    assert [trace.kv_head(h) for h in range(4)] == [0, 0, 1, 1]


def test_saved_npz_has_the_documented_keys_dtypes_and_shapes(seed_trace, tmp_path):
    path = seed_trace.save(tmp_path / "trace.npz")
    with np.load(path) as data:
        assert set(data.files) == {"source_tokens", "source_ids", "target_tokens", "target_ids",
                                   "encoder.self", "decoder.self", "decoder.cross", "meta"}
        assert data["source_tokens"].dtype.kind == "U"
        assert data["source_ids"].dtype == np.int64
        assert data["encoder.self"].dtype == np.float32
        assert data["encoder.self"].shape == (6, 8, 6, 6)
        assert data["decoder.self"].shape == (6, 8, 7, 7)
        assert data["decoder.cross"].shape == (6, 8, 7, 6)
        meta = json.loads(str(data["meta"]))
        np.testing.assert_array_equal(data["decoder.cross"], seed_trace.stack("decoder.cross"))
    for key in ("model", "family", "n_layers", "n_heads", "n_kv_heads"):
        assert key in meta
    assert meta["model"] == "own-random" and meta["family"] == "encoder-decoder"
    loaded = AttentionTrace.load(path)
    np.testing.assert_array_equal(loaded.stack("encoder.self"), seed_trace.stack("encoder.self"))
    assert list(loaded.target_tokens) == list(seed_trace.target_tokens)


def test_export_command_writes_the_format(tmp_path):
    out = tmp_path / "trace.npz"
    result = subprocess.run(
        [sys.executable, "-m", "model", "export", "--model", "own-random", "--text",
         SEED_SENTENCE, "--out", str(out), "--device", "cpu"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with np.load(out) as data:
        assert list(data["source_tokens"]) == ["The", "cat", "sat", "on", "the", "mat"]
        assert data["encoder.self"].shape == (6, 8, 6, 6)


def _export(tmp_path, spec: str) -> subprocess.CompletedProcess:
    # Offline on purpose: on a machine with network, a hub id would be looked up on the hub.
    return subprocess.run(
        [sys.executable, "-m", "model", "export", "--model", spec, "--text", "x",
         "--out", str(tmp_path / "x.npz")], cwd=ROOT, capture_output=True, text=True,
        timeout=60, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_export_command_explains_bad_input_without_a_traceback(tmp_path):
    result = _export(tmp_path, "no-such-model")
    assert result.returncode == 2
    assert "'no-such-model' is not a bundled model or a local folder" in result.stderr
    assert "Traceback" not in result.stderr
    missing = _export(tmp_path, str(tmp_path / "no" / "checkpoint"))
    assert missing.returncode == 2 and "no checkpoint folder" in missing.stderr
    assert "Traceback" not in missing.stderr
    help_text = subprocess.run([sys.executable, "-m", "model", "export", "--help"], cwd=ROOT,
                               capture_output=True, text=True, timeout=60).stdout
    for option in ("--model", "--text", "--target", "--out", "--device"):
        assert option in help_text


def test_empty_text_is_refused(own_random):
    with pytest.raises(ValueError, match="no words"):
        own_random.trace("   ")
