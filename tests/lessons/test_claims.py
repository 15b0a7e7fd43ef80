"""Lessons §3.4 "Why positions" and "Who looks at whom": without positional encoding a shuffle
only reorders the encoder's weights (checked exactly, on both own models and on RoPE), with it
the weights change; the lesson's claims are found in the own translator's trace, at least 0.4,
the largest over every layer and head, and "See it" opens that head in Explore with the cell
outlined."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import i18n
from model.lessons.positions import (
    compare_orders,
    encoder_attention,
    reorder,
    shuffle_order,
    source_ids,
)
from model.lessons.see_it import CLAIMS, CONTRAST, TIE, Claim, find_pair
from tests.helpers import SEED_SENTENCE, app_test, figures, plotly_array, tiny_own_model

SENTENCES = [SEED_SENTENCE, "The cat chased the mouse because it was hungry",
             "The small dog slept under the table yesterday"]


@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


def _traces_of(loaded, sentence):
    return loaded.trace(sentence).stack("encoder.self")  # [layer, head, query, key]


# --- why positions: the numbers -----------------------------------------------------------------

def test_a_shuffle_is_a_seeded_permutation_that_moves_a_word():
    for n in range(2, 9):
        for seed in range(20):
            order = shuffle_order(n, seed)
            assert sorted(order) == list(range(n))
            assert not np.array_equal(order, np.arange(n))
            np.testing.assert_array_equal(order, shuffle_order(n, seed))
    assert list(shuffle_order(1, 3)) == [0]
    assert len({tuple(shuffle_order(6, seed)) for seed in range(10)}) > 5  # "again" differs


def test_reorder_moves_rows_and_columns_together():
    weights = np.arange(9.0).reshape(3, 3)
    order = np.array([2, 0, 1])
    expected = np.array([[weights[order[i], order[j]] for j in range(3)] for i in range(3)])
    np.testing.assert_array_equal(reorder(weights, order), expected)


@pytest.mark.parametrize("spec", ["own-translator", "own-random"])
@pytest.mark.parametrize("sentence", SENTENCES)
def test_without_positions_a_shuffle_only_reorders_every_weight(spec, sentence, request,
                                                                translator):
    loaded = translator if spec == "own-translator" else request.getfixturevalue("own_random")
    for seed in range(3):
        lesson = compare_orders(loaded, sentence, seed)
        without, with_ = lesson.without_positions, lesson.with_positions
        # the shuffled run's weights are the original run's, rows and columns permuted
        np.testing.assert_allclose(without.shuffled,
                                   without.original[:, :, lesson.order][:, :, :, lesson.order],
                                   atol=1e-5)
        assert without.largest < 1e-5
        assert with_.largest > 0.05  # with positions the weights themselves change
        assert lesson.shuffled_words == [lesson.words[i] for i in lesson.order]


@pytest.mark.parametrize("sentence", SENTENCES)
def test_with_positions_the_lesson_runs_the_models_own_encoder(translator, sentence):
    lesson = compare_orders(translator, sentence, 1)
    np.testing.assert_allclose(lesson.with_positions.original, _traces_of(translator, sentence),
                               atol=1e-6)
    shuffled = " ".join(lesson.shuffled_words)  # a fixed vocabulary: the same ids
    np.testing.assert_allclose(lesson.with_positions.shuffled, _traces_of(translator, shuffled),
                               atol=1e-6)


def test_without_positions_equals_the_model_with_a_table_of_zeros(own_random):
    """An independent reference: the model's own forward pass, its sinusoidal table zeroed in
    a copy."""
    from model.own.adapter import OwnModel

    network = copy.deepcopy(own_random.network)
    network.src_embed.pe = network.src_embed.pe * 0
    zeroed = OwnModel("own-random", network, own_random.device)
    _words, ids = source_ids(own_random, SEED_SENTENCE)
    np.testing.assert_allclose(encoder_attention(own_random, ids, positions=False),
                               _traces_of(zeroed, SEED_SENTENCE), atol=1e-6)
    # and the shared model still adds its table
    np.testing.assert_allclose(encoder_attention(own_random, ids, positions=True),
                               _traces_of(own_random, SEED_SENTENCE), atol=1e-6)
    assert float(own_random.network.src_embed.pe.abs().max()) == 1.0


def test_rope_is_switched_off_on_a_copy_and_the_shared_model_keeps_rotating():
    loaded = tiny_own_model("encoder-decoder", positional="rope")
    lesson = compare_orders(loaded, "a b c d e f", 2)
    without = lesson.without_positions
    np.testing.assert_allclose(without.shuffled, reorder(without.original, lesson.order),
                               atol=1e-5)
    assert lesson.with_positions.largest > 1e-3
    assert lesson.positional == "rope"
    assert all(layer.self_attn.rope_base is not None for layer in loaded.network.encoder.layers)
    np.testing.assert_allclose(lesson.with_positions.original, _traces_of(loaded, "a b c d e f"),
                               atol=1e-6)


def test_words_the_translator_lacks_and_long_sentences_are_explained(translator, own_random):
    from model import UnknownWordsError

    with pytest.raises(UnknownWordsError) as error:
        compare_orders(translator, "The zebra sat", 0)
    assert error.value.words == ["zebra"]
    compare_orders(own_random, "The zebra sat", 0)  # own-random reads any words
    with pytest.raises(ValueError, match="at most 24"):
        compare_orders(own_random, " ".join(f"w{i}" for i in range(30)), 0)
    with pytest.raises(ValueError, match="no words"):
        compare_orders(own_random, "   ", 0)


# --- who looks at whom: the numbers ---------------------------------------------------------------

def _brute_force(trace, claim):
    """The pair's weights in every head, found without the lesson's code."""
    if claim.kind == "encoder.self":
        tokens = [t.lower() for t in trace.source_tokens]
        query = [i for i, t in enumerate(tokens) if t == claim.query][claim.occurrence]
    else:  # decoder rows: row t reads target token t and writes target token t + 1
        query = list(trace.target_tokens).index(claim.query) - 1
    key = [t.lower() for t in trace.source_tokens].index(claim.key)
    return trace.stack(claim.kind)[:, :, query, key], query, key  # [layer, head]


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_each_claim_is_found_where_its_weight_is_largest_and_at_least_0_4(translator, claim):
    trace = translator.trace(claim.sentence)
    found = find_pair(trace, claim)
    weights, query, key = _brute_force(trace, claim)
    assert (found.query, found.key) == (query, key)
    np.testing.assert_allclose(found.grid, weights)
    assert found.weight == pytest.approx(float(weights.max()), abs=TIE)
    # the first head as large as the largest (within TIE), layer by layer, head by head
    first = next((layer, head) for layer in range(weights.shape[0])
                 for head in range(weights.shape[1]) if weights[layer, head] >= weights.max() - TIE)
    assert (found.layer, found.head) == first
    assert found.weight >= 0.4
    assert found.query_label.lower() == claim.query and found.key_label.lower() == claim.key


def test_the_claims_match_the_lessons_numbers(translator):
    """The numbers the lesson's specification quotes from the own translator (sat → cat 0.72,
    the → mat 0.63, it → cat 0.47, 垫子 → mat 1.00)."""
    found = {c.id: find_pair(translator.trace(c.sentence), c) for c in CLAIMS}
    assert round(found["sat_cat"].weight, 2) == 0.72
    assert round(found["the_mat"].weight, 2) == 0.63
    assert round(found["it_cat"].weight, 2) == 0.47
    assert round(found["dianzi_mat"].weight, 2) == 1.00
    contrast = find_pair(translator.trace(CONTRAST.sentence), CONTRAST)
    assert contrast.weight < found["it_cat"].weight  # it is the cat, not the mouse


def test_the_second_the_is_the_one_looking_at_mat(translator):
    trace = translator.trace(SEED_SENTENCE)
    first = find_pair(trace, Claim("x", SEED_SENTENCE, "the", "mat", "encoder.self"))
    second = find_pair(trace, Claim("x", SEED_SENTENCE, "the", "mat", "encoder.self", 1))
    assert (first.query, second.query) == (0, 4)


def test_a_pair_not_in_the_run_says_which_word_is_missing(translator):
    trace = translator.trace(SEED_SENTENCE)
    with pytest.raises(ValueError, match="“dog” is not in"):
        find_pair(trace, Claim("x", SEED_SENTENCE, "sat", "dog", "encoder.self"))
    with pytest.raises(ValueError, match="“地毯” is not in"):
        find_pair(trace, Claim("x", SEED_SENTENCE, "地毯", "mat", "decoder.cross"))


# --- figures ------------------------------------------------------------------------------------

def test_a_heatmap_outlines_the_cell_it_is_asked_to():
    import viz
    from viz.style import HIGHLIGHT_COLOR

    weights = np.full((4, 5), 0.2)
    fig = viz.attention_heatmap(weights, list("abcd"), list("vwxyz"), highlight=(2, 3))
    (shape,) = fig.layout.shapes
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (2.5, 3.5, 1.5, 2.5)
    assert shape.line.color == HIGHLIGHT_COLOR
    assert not viz.attention_heatmap(weights, list("abcd"), list("vwxyz")).layout.shapes
    with pytest.raises(ValueError, match="outside"):
        viz.attention_heatmap(weights, list("abcd"), list("vwxyz"), highlight=(4, 0))
    # pooled axes: the block holding the cell
    long = np.full((600, 600), 1 / 600)
    tokens = [f"t{i}" for i in range(600)]
    pooled = viz.attention_heatmap(long, tokens, tokens, highlight=(599, 10))
    (shape,) = pooled.layout.shapes
    assert (shape.y0 + 0.5, shape.x0 + 0.5) == (599 // 3, 10 // 3)


def test_the_grid_of_heads_outlines_the_cell_in_its_head_only():
    import viz

    layer = np.full((4, 3, 3), 1 / 3)
    fig = viz.heads_grid(layer, list("abc"), list("abc"), cols=2, highlight=(3, 1, 2))
    (shape,) = fig.layout.shapes
    assert (shape.xref, shape.yref) == ("x4", "y4")  # head 3: the fourth subplot
    assert (shape.x0 + 0.5, shape.y0 + 0.5) == (2, 1)


def test_order_panels_draw_both_orders_and_the_difference():
    from viz.lessons.positions import order_panels

    original = np.eye(3)
    order = np.array([2, 0, 1])
    shuffled = reorder(original, order)
    fig = order_panels(original, shuffled, np.abs(shuffled - reorder(original, order)),
                       ["a", "b", "c"], ["c", "a", "b"], title="t")
    assert [t.coloraxis for t in fig.data] == ["coloraxis", "coloraxis", "coloraxis2"]
    np.testing.assert_array_equal(fig.data[1].z, shuffled)
    assert fig.layout.xaxis2.ticktext == ("c", "a", "b")
    assert fig.layout.coloraxis2.cmax == 1


def test_pair_grid_writes_every_head_and_outlines_each_rows_largest():
    from viz.lessons.see_it import pair_grid
    from viz.style import HIGHLIGHT_COLOR

    grids = [np.array([[0.1, 0.9], [0.2, 0.3]]), np.array([[0.5, 0.1], [0.05, 0.2]])]
    fig = pair_grid(grids, ["sat → cat", "垫子 → mat"], [(0, 1), (0, 0)])
    np.testing.assert_array_equal(fig.data[0].z, [[0.1, 0.9, 0.2, 0.3], [0.5, 0.1, 0.05, 0.2]])
    outlines = [s for s in fig.layout.shapes if s.line.color == HIGHLIGHT_COLOR]
    assert [(s.x0 + 0.5, s.y0 + 0.5) for s in outlines] == [(1, 0), (0, 1)]
    assert fig.layout.xaxis.ticktext == ("0·0", "0·1", "1·0", "1·1")


# --- the pages ---------------------------------------------------------------------------------

def _z(figure, index):
    return plotly_array(figure["data"][index]["z"])


def test_the_positions_page_shows_a_shuffle_that_only_reorders_without_positions():
    at = app_test("lesson_positions")
    assert not at.exception
    without, with_ = figures(at)
    order_words = at.markdown[1].value
    assert order_words.startswith("Shuffled:")
    # panel ② of the run without positions is panel ① with rows and columns reordered
    words = without["layout"]["xaxis"]["ticktext"]
    shuffled = without["layout"]["xaxis2"]["ticktext"]
    assert sorted(words) == sorted(shuffled) and list(words) != list(shuffled)
    assert np.abs(_z(without, 2)).max() < 1e-5
    assert np.abs(_z(with_, 2)).max() > 0.05
    metrics = {m.label: m.value for m in at.metric}
    tiny = metrics["Largest difference without positions"]
    assert tiny == "0" or "× 10⁻" in tiny  # a number near 0, e.g. 6.6 × 10⁻⁷
    assert float(metrics["Largest difference with positions"]) > 0.05
    at.button(key="pos_shuffle").click().run()
    assert at.markdown[1].value != order_words  # another order of the same words
    at.radio(key="pos_model").set_value("own-random").run()
    assert not at.exception
    assert any("random weights" in info.value for info in at.info)
    assert np.abs(_z(figures(at)[0], 2)).max() < 1e-5


def test_the_positions_page_explains_words_the_translator_does_not_know():
    at = app_test("lesson_positions")
    at.text_input(key="pos_sentence").set_value("The zebra sat").run()
    assert not at.exception
    assert "zebra" in at.error[0].value and "own" in at.error[0].value


@pytest.mark.parametrize("key, value", [("pos_seed", "x"), ("pos_layer", 9), ("pos_head", 11),
                                        ("pos_model", "minilm"), ("pos_sentence", 5)])
def test_the_positions_page_survives_any_leftover_value(key, value):
    at = app_test("shapes", model_choice="own-random")
    at.session_state[key] = value
    at.switch_page("app_pages/lessons/positions.py").run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == 2


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_see_it_opens_the_head_where_the_pair_is_largest_with_the_cell_outlined(claim,
                                                                                translator):
    at = app_test("lesson_see_it", model_choice="own-random", text="hello world",
                  target="猫 在")
    assert not at.exception
    at.button(key=f"see_it_{claim.id}").click().run()
    assert not at.exception
    assert at.title[0].value == "Explore attention"
    heatmap, grid = figures(at)[:2]
    (shape,) = heatmap["layout"]["shapes"]
    row, col = int(shape["y0"] + 0.5), int(shape["x0"] + 0.5)
    weight = _z(heatmap, 0)[row, col]
    weights, query, key = _brute_force(translator.trace(claim.sentence), claim)
    assert (row, col) == (query, key)
    assert weight >= 0.4
    assert weight == pytest.approx(float(weights.max()), abs=TIE)
    layer, head = at.selectbox(key="layer").value, at.selectbox(key="head").value
    assert weights[layer, head] >= weights.max() - TIE  # as large as the largest: a tie's first
    assert weight == pytest.approx(float(weights[layer, head]), abs=1e-6)
    assert at.selectbox(key="kind").value == claim.kind
    assert heatmap["layout"]["yaxis"]["ticktext"][row].lower() == claim.query
    assert heatmap["layout"]["xaxis"]["ticktext"][col].lower() == claim.key
    assert len(grid["layout"]["shapes"]) == 1  # and in the grid of the layer's heads
    assert f"weight {weight:.2f}" in at.info[-1].value
    assert at.session_state["model_choice"] == "own-translator"
    assert at.session_state["text"] == claim.sentence and at.session_state["target"] == ""


def test_the_outline_follows_its_head_and_is_forgotten_with_another_text():
    at = app_test("lesson_see_it")
    at.button(key="see_it_sat_cat").click().run()
    layer, head = at.selectbox(key="layer").value, at.selectbox(key="head").value
    at.switch_page("app_pages/views/explore.py")  # AppTest reruns the page it last switched to
    at.selectbox(key="head").set_value((head + 1) % 4).run()
    assert not figures(at)[0]["layout"].get("shapes")
    assert any(f"layer {layer}, head {head}" in c.value for c in at.caption)
    at.selectbox(key="head").set_value(head).run()
    assert figures(at)[0]["layout"]["shapes"]
    at.text_area(key="text").set_value("The dog sat on the mat").run()
    assert not figures(at)[0]["layout"].get("shapes")  # another text: no pair to outline
    at.text_area(key="text").set_value(SEED_SENTENCE).run()
    assert not figures(at)[0]["layout"].get("shapes")  # and it stays forgotten


def test_see_it_page_searches_every_head_and_names_the_contrast():
    at = app_test("lesson_see_it")
    assert not at.exception
    metrics = [(m.label, float(m.value)) for m in at.metric]
    assert len(metrics) == len(CLAIMS) and all(value >= 0.4 for _label, value in metrics)
    (grid,) = figures(at)
    assert _z(grid, 0).shape == (len(CLAIMS), 12)  # 3 layers × 4 heads of the translator
    assert any("it → mouse" in c.value for c in at.caption)


def test_explore_survives_an_open_head_of_any_shape():
    for value in [("encoder.self", 1, 1, "x"), ("encoder.self", 0, 0, (99, 99, "a", "b")), 5,
                  ("encoder.self", 1, 1, (0, 0, "The", "The"))]:
        at = app_test("explore")
        at.session_state["open_head"] = value
        at.switch_page("app_pages/views/explore.py").run()
        assert not at.exception, value


@pytest.mark.parametrize("page", ["lesson_positions", "lesson_see_it"])
def test_the_pages_render_in_chinese(page):
    with i18n.use("zh"):
        at = app_test(page, lang="zh")
        assert not at.exception
        assert at.get("plotly_chart")
        expected = i18n._("Shuffle again") if page == "lesson_positions" else i18n._("See it")
        assert expected != ("Shuffle again" if page == "lesson_positions" else "See it")
        assert any(b.label == expected for b in at.button)
