"""Sentences run as a padded batch: statistics equal those of each sentence run alone,
padding excluded; span attention and comparisons against direct computations."""

from __future__ import annotations

import numpy as np
import pytest

from model import load
from model.analysis.statistics import STATS, head_stats
from model.corpus.engine import corpus_table
from model.corpus.statistics import (
    COLUMNS,
    SPAN,
    Span,
    batch_statistics,
    defined_statistics,
    heads_by_change,
    js_divergence,
    longest_sentence,
    matches,
    queries_per_sentence,
    ranked_heads,
    sentences_ran,
    summarise_heads,
)
from model.hf import HFModel

SENTENCES = ["The cat sat on the mat because it was tired.", "A dog slept.",
             "The cat chased the mouse because it was hungry.", "it", "it chased the cat"]


def _single_run_table(model, sentences):
    """The statistics of each sentence traced alone (the Head statistics page's numbers)."""
    rows = {key: [] for key in COLUMNS}
    for s, text in enumerate(sentences):
        trace = model.trace(text)
        for name in trace.names:
            stats = head_stats(trace, name)
            n_q = len(trace.axes(name)[0])
            for layer in range(trace.layers(name)):
                for head in range(trace.n_heads):
                    rows["sentence"].append(s)
                    rows["kind"].append(name)
                    rows["layer"].append(layer)
                    rows["head"].append(head)
                    rows["queries"].append(n_q)
                    for key in STATS:
                        rows[key].append(stats[key][layer, head])
    return {key: np.asarray(value) for key, value in rows.items()}


def _assert_tables_equal(got, expected):
    order = np.lexsort((got["head"], got["layer"], got["kind"], got["sentence"]))
    reference = np.lexsort((expected["head"], expected["layer"], expected["kind"],
                            expected["sentence"]))
    for key in ("sentence", "kind", "layer", "head", "queries"):
        np.testing.assert_array_equal(got[key][order], expected[key][reference], err_msg=key)
    for key in STATS:
        np.testing.assert_allclose(got[key][order], expected[key][reference], atol=1e-5,
                                   rtol=0, equal_nan=True, err_msg=key)


@pytest.mark.parametrize("name", ["bert", "llama", "gpt2", "t5", "bart"])
def test_batched_statistics_equal_single_runs_with_padding_excluded(tiny_checkpoints, name):
    model = HFModel.load(str(tiny_checkpoints[name]), device="cpu")
    batch = model.attention_batch(SENTENCES)
    lengths = [len(t.axes(t.names[0])[0]) for t in batch.traces]
    assert len(set(lengths)) > 1  # the batch was padded
    _assert_tables_equal(batch_statistics(batch), _single_run_table(model, SENTENCES))


def test_the_own_model_runs_sentence_by_sentence_with_the_same_numbers():
    model = load("own-random", device="cpu")
    sentences = ["the cat sat on the mat", "a dog slept", "it was tired"]
    table, skipped = corpus_table(model, sentences, batch_size=2)
    assert skipped == []
    _assert_tables_equal(table, _single_run_table(model, sentences))
    assert set(table["kind"]) == {"encoder.self", "decoder.self", "decoder.cross"}


def test_batches_of_any_size_give_the_same_table(tiny_checkpoints):
    model = HFModel.load(str(tiny_checkpoints["llama"]), device="cpu")
    seen = []
    one, _skipped = corpus_table(model, SENTENCES[:4] * 3, batch_size=1)
    many, _skipped = corpus_table(model, SENTENCES[:4] * 3, batch_size=5,
                             progress=lambda done, total: seen.append((done, total)))
    assert seen == [(5, 12), (10, 12), (12, 12)]
    for key in one:
        if one[key].dtype.kind == "f":
            np.testing.assert_allclose(one[key], many[key], atol=1e-5, equal_nan=True)
        else:
            np.testing.assert_array_equal(one[key], many[key])


def test_span_attention_over_a_hand_built_batch_equals_a_direct_computation(tiny_checkpoints):
    model = HFModel.load(str(tiny_checkpoints["bert"]), device="cpu")
    span = Span(queries="it", keys="cat|mouse|dog", before=True)
    patterns = span.compiled()
    batch = model.attention_batch(SENTENCES)
    table = batch_statistics(batch, span)
    for b, text in enumerate(SENTENCES):
        trace = model.trace(text)
        tokens = trace.tokens
        q_sel = np.flatnonzero(matches(patterns[0], tokens))
        k_sel = np.flatnonzero(matches(patterns[1], tokens))
        for layer in range(trace.n_layers):
            for head in range(trace.n_heads):
                rows = ((table["sentence"] == b) & (table["layer"] == layer)
                        & (table["head"] == head))
                got = table[SPAN][rows][0]
                if not any(k < q for q in q_sel for k in k_sel):  # no key before any query
                    assert np.isnan(got)
                    continue
                w = trace.weights("encoder.self", layer, head).astype(np.float64)
                direct = np.mean([w[q, [k for k in k_sel if k < q]].sum() for q in q_sel])
                assert got == pytest.approx(direct, abs=1e-6)
    assert not np.isnan(table[SPAN][table["sentence"] == 0]).any()  # "it" after "cat"
    assert np.isnan(table[SPAN][table["sentence"] == 3]).all()  # "it" alone: no key
    assert np.isnan(table[SPAN][table["sentence"] == 4]).all()  # its only key comes after it


def test_keys_before_the_query_apply_to_self_attention_only(tiny_checkpoints):
    model = HFModel.load(str(tiny_checkpoints["bart"]), device="cpu")
    batch = model.attention_batch(["it chased the cat"])
    before = batch_statistics(batch, Span("it", "cat", before=True))
    anywhere = batch_statistics(batch, Span("it", "cat"))
    self_rows = before["kind"] == "encoder.self"
    assert np.isnan(before[SPAN][self_rows]).all()  # "cat" comes after "it"
    assert not np.isnan(anywhere[SPAN][self_rows]).any()
    cross = before["kind"] == "decoder.cross"  # no "it" among the decoder's tokens here
    np.testing.assert_array_equal(before[SPAN][cross], anywhere[SPAN][cross])


def test_a_bad_pattern_is_refused_with_its_name():
    with pytest.raises(ValueError, match="not a regular expression"):
        Span(queries="(it", keys="cat").compiled()
    with pytest.raises(ValueError, match="empty"):
        Span(queries="it", keys=" ").compiled()


def test_head_summaries_give_the_mean_and_a_t_interval_over_sentences():
    table = {"sentence": np.array([0, 1, 2, 0, 1, 2]), "kind": np.array(["k"] * 6),
             "layer": np.array([0, 0, 0, 0, 0, 0]), "head": np.array([0, 0, 0, 1, 1, 1]),
             "entropy": np.array([1.0, 2.0, 3.0, 5.0, np.nan, 5.0])}
    summary = summarise_heads(table, "k", "entropy")
    assert summary.mean.tolist() == [[2.0, 5.0]]
    assert summary.count.tolist() == [[3, 2]]
    half = 4.302652729911275 * 1.0 / np.sqrt(3)  # t(0.975, 2) · sd / √n
    assert summary.low[0, 0] == pytest.approx(2 - half)
    assert summary.high[0, 0] == pytest.approx(2 + half)
    assert summary.low[0, 1] == summary.high[0, 1] == 5.0  # no spread: an empty interval
    ranked = ranked_heads(summary)
    assert [(r["layer"], r["head"]) for r in ranked] == [(0, 1), (0, 0)]


def test_the_corpus_pages_counts_come_from_the_table():
    """What the Corpus page says of a table: sentences that ran, the statistics a kind has,
    each sentence's queries, the longest sentence; against a hand-built table."""
    table = {"sentence": np.array([0, 0, 2, 2, 2]), "kind": np.array(["s", "c", "s", "s", "c"]),
             "queries": np.array([3, 3, 5, 5, 5]),
             "entropy": np.array([0.1, 0.2, 0.3, 0.4, 0.5]),
             "distance": np.array([1.0, np.nan, 2.0, 3.0, np.nan])}
    assert sentences_ran(table) == 2  # sentence 1 was left out
    assert defined_statistics(table, "s", ("entropy", "distance")) == ["entropy", "distance"]
    assert defined_statistics(table, "c", ("entropy", "distance")) == ["entropy"]
    np.testing.assert_array_equal(queries_per_sentence(table, "s", 4), [3, 0, 5, 0])
    assert longest_sentence(np.array([4, 9, 2, 9])) == (1, 9)


def test_a_pattern_compared_with_itself_differs_nowhere_and_ranks_no_head(tiny_checkpoints):
    model = HFModel.load(str(tiny_checkpoints["llama"]), device="cpu")
    stack = model.trace(SENTENCES[0]).stack("decoder.self")
    assert heads_by_change(zip(stack, stack.copy())) == []
    assert js_divergence(stack, stack).max() == 0
    other = model.trace(SENTENCES[2]).stack("decoder.self")
    n = min(stack.shape[-1], other.shape[-1])
    changed = heads_by_change(zip(stack[..., :n, :n], other[..., :n, :n]))
    assert changed and changed[0]["divergence"] >= changed[-1]["divergence"] > 0


def test_jensen_shannon_divergence_of_disjoint_rows_is_ln_2():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    q = np.array([[0.0, 1.0], [0.5, 0.5]])
    assert js_divergence(p, q) == pytest.approx([np.log(2), 0.0])


def test_a_sentence_the_model_cannot_read_is_left_out_with_its_message():
    model = load("own-translator", device="cpu")
    tokens: list = []
    table, skipped = corpus_table(model, ["the cat sat on the mat", "the zebra flew",
                                          "the dog sat on the mat"], batch_size=3,
                                  tokens=tokens)
    assert tokens == [("the", "cat", "sat", "on", "the", "mat"), None,
                      ("the", "dog", "sat", "on", "the", "mat")]
    assert sorted(set(table["sentence"].tolist())) == [0, 2]
    assert [i for i, _m in skipped] == [1] and "zebra" in skipped[0][1]


def test_batches_hold_to_the_memory_budget_and_halve_when_memory_runs_out(tiny_checkpoints,
                                                                          monkeypatch):
    import torch

    from model.budget import Lengths
    from model.corpus.engine import cut

    model = HFModel.load(str(tiny_checkpoints["llama"]), device="cpu")
    sizes = [Lengths(10)] * 7
    one = model.memory_needed(Lengths(10)) + 8 * model.dims.n_heads * 10 ** 2 * 4
    assert list(cut(model, sizes, 32, 3 * one)) == [(0, 3), (3, 6), (6, 7)]
    assert list(cut(model, sizes, 2, 1 << 40)) == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert list(cut(model, sizes, 32, 1)) == [(i, i + 1) for i in range(7)]  # one at least

    expected, _skipped = corpus_table(model, SENTENCES, batch_size=8)
    run = model.attention_batch
    sizes_run = []

    def small_device(texts):
        sizes_run.append(len(texts))
        if len(texts) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return run(texts)

    monkeypatch.setattr(model, "attention_batch", small_device)
    table, skipped = corpus_table(model, SENTENCES, batch_size=8)
    assert sizes_run == [5, 2, 3, 1, 2] and skipped == []  # halves, and halves again
    for key in expected:
        if expected[key].dtype.kind == "f":
            np.testing.assert_allclose(table[key], expected[key], atol=1e-5, equal_nan=True)
        else:
            np.testing.assert_array_equal(table[key], expected[key])
