"""A live class's questions (model.analysis.questions) against independent references: the
seed's worked numbers, torch's softmax of the trace's own scores, and the mask's rule."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from model.analysis import questions as q
from model.analysis.cuts import query_rows


def _torch_weights(trace, kind, layer, head):
    """The head's weights recomputed from its scores and mask with torch's softmax."""
    scores = torch.tensor(trace.scores(kind, layer, head), dtype=torch.float64)
    allowed = torch.tensor(trace.mask(kind, layer))
    return torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1).numpy()


def test_the_token_a_head_attends_to_most_is_the_argmax_of_its_real_row(seed_trace):
    for kind in seed_trace.names:
        queries, keys = seed_trace.axes(kind)
        for layer, head, query in ((0, 0, 0), (1, 3, len(queries) - 1), (5, 7, 2)):
            asked = q.most_attended(seed_trace, kind, layer, head, query)
            row = _torch_weights(seed_trace, kind, layer, head)[query]
            assert asked.kind == "choice" and len(asked.options) == len(keys)
            assert asked.truth["answer"] == int(np.argmax(row))
            np.testing.assert_allclose(asked.truth["weights"], row, atol=2e-6)
            named = query_rows(seed_trace, kind).labels[query]  # as the page names the row
            assert f"“{named}”" in asked.prompt
            json.dumps(asked.truth)  # stored as JSON


def test_the_head_that_links_two_words_is_the_argmax_over_heads(seed_trace):
    cells = [_torch_weights(seed_trace, "encoder.self", 2, head)[2, 1] for head in range(8)]
    asked = q.linking_head(seed_trace, "encoder.self", 2, query=2, key=1)  # sat → cat
    assert asked.options == tuple(f"head {head}" for head in range(8))
    assert asked.truth["answer"] == int(np.argmax(cells))
    np.testing.assert_allclose(asked.truth["weights"], cells, atol=2e-6)
    with pytest.raises(ValueError, match="not a cell"):
        q.linking_head(seed_trace, "encoder.self", 2, query=99, key=1)


def test_numbers_follow_the_seeds_worked_examples():
    big = q.softmax_first([8, -3])  # seed 4.4: [8, -3] → [1.000, 0.000]
    assert big.kind == "number"
    assert big.truth["answer"] == pytest.approx(
        torch.softmax(torch.tensor([8.0, -3.0], dtype=torch.float64), 0)[0].item(), abs=1e-6)
    assert round(big.truth["answer"], 3) == 1.000
    assert q.correct(big.truth, "number", 0.995) and not q.correct(big.truth, "number", 0.9)
    cat = q.scaled_weight([1.0, 0.0, 0.7, 1.0], d_k=2)  # seed 4.3: 猫 gets 0.30
    assert round(cat.truth["answer"], 2) == 0.30
    assert cat.truth["scaled"] == pytest.approx([0.71, 0.00, 0.49, 0.71], abs=0.01)
    for bad in ([1.0], [1.0, math.inf]):
        with pytest.raises(ValueError):
            q.softmax_first(bad)


def test_the_kv_cache_size_is_two_tensors_per_layer_and_kv_head(seed_trace):
    dims = seed_trace.dims
    tokens = len(seed_trace.axes("decoder.self")[1])
    asked = q.kv_cache_megabytes(seed_trace, bytes_per_value=2)
    expected = 2 * 6 * 8 * 64 * tokens * 2 / 1e6
    assert dims.n_decoder_layers == 6 and asked.truth["answer"] == pytest.approx(expected)
    assert q.correct(asked.truth, "number", expected * 1.04)
    assert not q.correct(asked.truth, "number", expected * 1.2)


def test_forbidden_cells_are_the_upper_triangle_of_a_causal_mask(seed_trace):
    n = len(seed_trace.axes("decoder.self")[0])
    asked = q.forbidden_cells(seed_trace, "decoder.self")
    assert asked.truth["answer"] == n * (n - 1) // 2
    assert q.forbidden_cells(seed_trace, "encoder.self").truth["answer"] == 0


def test_repeated_tokens_stay_distinct_options_and_long_rows_are_windowed(seed_trace):
    assert q.token_options(["the", "cat", "the"]) == ("the (0)", "cat", "the (2)")
    assert q.token_options(["the", "the"], first=40) == ("the (40)", "the (41)")
    window = q._window(1000, 990)
    assert len(window) == q.MAX_OPTIONS and window.stop == 1000
    assert q._window(5, 3) == range(5)


def test_the_average_of_heads_is_the_mean_of_torchs_rows(seed_trace):
    kind = "decoder.cross"
    query = 2
    mean = np.mean([_torch_weights(seed_trace, kind, 3, head)[query] for head in range(8)],
                   axis=0)
    asked = q.most_attended(seed_trace, kind, 3, None, query)
    assert asked.truth["answer"] == int(np.argmax(mean))
    np.testing.assert_allclose(asked.truth["weights"], mean, atol=2e-6)
    assert "average" in asked.prompt


def test_a_heatmap_offers_one_question_per_row_shown(seed_trace):
    kind = "encoder.self"
    n = len(seed_trace.axes(kind)[0])
    asked = q.row_questions(seed_trace, kind, 1, 2, range(1, n + 5))  # clipped to the rows
    assert [one.truth["query"] for one in asked] == list(range(1, n))
    for one in asked:
        row = _torch_weights(seed_trace, kind, 1, 2)[one.truth["query"]]
        assert one.truth["answer"] == int(np.argmax(row))


def test_the_sharpest_link_is_the_cell_one_head_weighs_most_past_the_first_key(seed_trace):
    kind, layer, query = "encoder.self", 4, 3
    heads = np.stack([_torch_weights(seed_trace, kind, layer, head)[query] for head in range(8)])
    heads[:, 0] = -1
    key = int(np.unravel_index(int(np.argmax(heads)), heads.shape)[1])
    asked = q.sharpest_link(seed_trace, kind, layer, query)
    assert asked.truth["key"] == key and asked.truth["query"] == query
    # a causal first row sees only the first key: the link asked about is that one
    first = q.sharpest_link(seed_trace, "decoder.self", 0, 0)
    assert first.truth["key"] == 0


def test_on_a_long_text_the_options_do_not_depend_on_the_answer(own_random):
    text = " ".join(f"w{i % 37}" for i in range(150))
    trace = own_random.trace(text)
    kind = "encoder.self"
    n = len(trace.axes(kind)[1])
    assert n > q.MAX_OPTIONS
    asked = q.row_questions(trace, kind, 2, 1, range(60, 140))
    assert 0 < len(asked) <= q.MAX_OPTIONS
    weights = _torch_weights(trace, kind, 2, 1)
    for one in asked:
        query, first = one.truth["query"], one.truth["first_key"]
        assert first == q._window(n, query).start  # where the query is, not where the answer
        assert one.truth["answer"] + first == int(np.argmax(weights[query]))
        assert len(one.options) == q.MAX_OPTIONS
    assert len({one.truth["answer"] for one in asked}) > 1
    # a row whose answer lies outside the keys offered is not asked
    for query in set(range(60, 124)) - {one.truth["query"] for one in asked}:
        assert int(np.argmax(weights[query])) not in q._window(n, query)
