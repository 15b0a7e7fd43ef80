"""Lessons §4.3 (attention by hand) and §4.4 (why divide by √d_k): the lesson's numbers, the
project's own attention() on them, bad edits explained, and both pages in English and 中文.

References are independent of the code under test: the numbers printed in the lesson text,
direct numpy computations, finite differences, and the model's own weights."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

import i18n
from model.lessons import hand, scaling
from model.own.transformer import attention
from tests.helpers import ROOT, SEED_SENTENCE, figures, messages, shown
from tests.helpers import app_test as fresh_app_test
from viz import numbers
from viz.lessons import hand as hand_fig
from viz.lessons import numbers as nums
from viz.lessons import scaling as scaling_fig


def app_test(page: str, **state):
    """``page`` with every step of 4.3 shown (its stepper opens at the first): these tests
    read the whole calculation."""
    return fresh_app_test(page, **{"hand_step": 99, **state})


K = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [1.0, 0.0]])
V = np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 2.0], [0.0, 0.0]])
Q = np.array([1.0, 0.0])
# The exact results as the lesson's specification wrote them, to 4 decimals (truncated, not
# rounded; see test_exact_arithmetic_...).
SPEC_WEIGHTS = [0.3028, 0.1493, 0.2450, 0.3028]
SPEC_OUTPUT = [0.8506, 1.2407]


def numpy_attention(q, keys, values):
    """Scaled dot-product attention of one query, written directly in numpy."""
    scores = np.asarray(keys) @ np.asarray(q) / np.sqrt(len(q))
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    return weights, weights @ np.asarray(values)


# --- §4.3: the numbers --------------------------------------------------------------------------

def test_the_lessons_rounding_reproduces_every_number_it_writes():
    steps = hand.hand_steps(hand.seed_inputs(), decimals=2)
    # the lesson text, §4.3 steps 2 to 5
    assert steps.scores.tolist() == [1.0, 0.0, 0.7, 1.0]
    assert steps.sqrt_dk == 1.41
    assert steps.scaled.tolist() == [0.71, 0.0, 0.5, 0.71]
    assert steps.exps.tolist() == [2.03, 1.0, 1.65, 2.03]
    assert steps.total == 6.71
    assert steps.weights.tolist() == [0.30, 0.15, 0.25, 0.30]
    assert steps.weighted.tolist() == [[0.6, 0.3], [0.0, 0.45], [0.25, 0.5], [0.0, 0.0]]
    assert steps.output.tolist() == [0.85, 1.25]


def test_exact_arithmetic_equals_a_direct_numpy_computation():
    steps = hand.hand_steps(hand.seed_inputs())
    weights, output = numpy_attention(Q, K, V)
    np.testing.assert_allclose(steps.weights, weights, rtol=1e-12)
    np.testing.assert_allclose(steps.output, output, rtol=1e-12)
    assert steps.total == pytest.approx(np.exp(K @ Q / math.sqrt(2)).sum())
    # The specification's "exact" numbers are within 1e-4 of these, but not their rounding:
    # 0.302853 rounds to 0.3029 and 0.850672 to 0.8507 (0.3028 and 0.8506 are truncated).
    np.testing.assert_allclose(steps.weights, SPEC_WEIGHTS, atol=1e-4)
    np.testing.assert_allclose(steps.output, SPEC_OUTPUT, atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_projects_attention_function_gives_what_numpy_gives(seed):
    rng = np.random.default_rng(seed)
    n, d_k, d_v = 3 + seed, 2 + seed, 2
    keys, values, q = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v)), rng.normal(size=d_k)
    inputs = hand.hand_inputs([f"w{i}" for i in range(n)], keys, values, q)
    output, weights = hand.run_attention(inputs)
    expected_weights, expected_output = numpy_attention(q, keys, values)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12)
    np.testing.assert_allclose(output, expected_output, rtol=1e-12)
    np.testing.assert_allclose(hand.hand_steps(inputs).output, expected_output, rtol=1e-12)


def test_attention_lines_are_read_from_the_functions_live_source():
    lines = hand.attention_lines()
    assert set(lines) == {"d_k", "①", "②", "③", "④"}
    file_lines = (ROOT / "model/own/transformer.py").read_text(encoding="utf-8").splitlines()
    source = inspect.getsource(attention)
    for block in lines.values():
        assert block.path == "model/own/transformer.py"
        in_file = "\n".join(line.strip() for line in file_lines[block.first - 1:block.last])
        assert in_file == "\n".join(line.strip() for line in block.code.splitlines())
        assert all(line.strip() in source for line in block.code.splitlines())
    assert "torch.matmul(Q, K.transpose(-2, -1))" in lines["①"].code
    assert "math.sqrt" in lines["①"].code and "Q.size(-1)" in lines["d_k"].code
    assert "masked_fill" in lines["②"].code
    assert "F.softmax" in lines["③"].code
    assert "torch.matmul(weights, V)" in lines["④"].code


def test_attention_lines_follow_the_function_they_are_given():
    def changed(Q, K, V):
        d = Q.size(-1)
        # ① a different way to score
        s = Q @ K.mT / d ** 0.5
        # ③ normalise
        w = s.softmax(-1)
        # ④ mix
        return w @ V, w

    lines = hand.attention_lines(changed)
    assert lines["①"].code.splitlines()[1] == "s = Q @ K.mT / d ** 0.5"
    assert lines["d_k"].code == "d = Q.size(-1)"
    assert lines["④"].code.endswith("return w @ V, w") and "②" not in lines
    start = inspect.getsourcelines(changed)[1]
    assert lines["③"].first == start + 4  # the def is line 0
    assert Path(lines["③"].path).name == "test_math.py"


BAD = [
    (["a", "b"], [[1, 0], [None, 1]], [[1, 1], [2, 2]], [1, 0], "is empty"),
    (["a", "b"], [[1, 0], ["abc", 1]], [[1, 1], [2, 2]], [1, 0], "not a number"),
    (["a", "b"], [[1, 0], [float("nan"), 1]], [[1, 1], [2, 2]], [1, 0], "empty or not a number"),
    (["a", "b"], [[1, 0], [1, 1]], [[1, 1], [2, float("inf")]], [1, 0], "between"),
    (["a", "b"], [[1, 0], [1, 1]], [[1, 1], [2, 2]], [1, ""], "is empty"),
    (["a", "b"], [[1, 0], [1, 1]], [[1, 1], [2, 2]], [1, 0, 2], "entries"),
    (["a", "b"], [[1, 0], [1, 1, 3]], [[1, 1], [2, 2]], [1, 0], "different lengths"),
    (["a", "b"], [[1, 0]], [[1, 1], [2, 2]], [1, 0], "rows"),
    (["a", "b"], [[1, 0], [1, 1]], [[1, 1]], [1, 0], "rows"),
    ([], [], [], [1, 0], "no word"),
    (["a"], [[1e6, 0]], [[1, 1]], [1, 0], "between"),
    (["a"], [[True, 0]], [[1, 1]], [1, 0], "not a number"),
]


@pytest.mark.parametrize("words, keys, values, query, message", BAD)
def test_bad_edits_are_refused_with_a_message_that_names_the_problem(words, keys, values,
                                                                    query, message):
    with pytest.raises(ValueError, match=message):
        hand.hand_inputs(words, keys, values, query)


def test_an_empty_word_is_named_by_its_position():
    assert hand.hand_inputs(["", None], [[1, 0], [0, 1]], [[1], [2]], [1, 0]).words == (
        "word 1", "word 2")


def test_numbers_too_large_for_ex_or_rounded_to_nothing_are_explained():
    big = hand.hand_inputs(["a", "b"], [[100, 100], [0, 0]], [[1], [2]], [100, 100])
    with pytest.raises(ValueError, match="too large"):
        hand.hand_steps(big)
    tiny = hand.hand_inputs(["a"], [[-10, -10]], [[1]], [10, 10])
    with pytest.raises(ValueError, match="exact arithmetic"):
        hand.hand_steps(tiny, decimals=2)
    assert hand.hand_steps(tiny).weights.tolist() == [1.0]


# --- §4.4: the numbers --------------------------------------------------------------------------

@pytest.mark.parametrize("d_k", scaling.D_K_CHOICES)
def test_the_spread_of_q_dot_k_is_the_square_root_of_d_k(d_k):
    products = scaling.dot_products(d_k)
    assert products.std() == pytest.approx(math.sqrt(d_k), rel=0.1)
    np.testing.assert_array_equal(products, scaling.dot_products(d_k))  # seeded: the same numbers
    assert abs(products.mean()) < 0.1 * math.sqrt(d_k)


def test_the_spread_over_every_width_follows_the_square_root():
    spreads = scaling.spread_by_width()
    np.testing.assert_allclose(spreads, np.sqrt(scaling.D_K_CHOICES), rtol=0.1)


def test_the_lessons_8_and_minus_3_saturate_without_scaling():
    sat = scaling.two_scores([8, -3], d_k=64)
    assert [f"{p:.3f}" for p in sat.raw] == ["1.000", "0.000"]  # the lesson's [1.000, 0.000]
    assert round(sat.exps[0]) == 2981 and round(sat.exps[1], 2) == 0.05  # e^8, e^-3
    direct = np.exp([1.0, -0.375]) / np.exp([1.0, -0.375]).sum()  # [8, -3] / √64
    np.testing.assert_allclose(sat.scaled, direct)
    assert sat.raw_gradient < 1e-4 < 0.1 < sat.scaled_gradient


@pytest.mark.parametrize("scores", [[8.0, -3.0], [1.0, -0.375], [0.3, 2.0, -1.0, 0.5]])
def test_the_softmax_jacobian_matches_finite_differences(scores):
    scores = np.array(scores)
    p = scaling.softmax(scores)
    eps = 1e-6
    softmax = scaling.softmax
    numeric = np.stack([(softmax(scores + eps * e) - softmax(scores - eps * e)) / (2 * eps)
                        for e in np.eye(len(scores))], axis=1)  # [output, input]
    np.testing.assert_allclose(scaling.softmax_jacobian(p), numeric, atol=1e-8)
    assert scaling.gradient_size(p) == pytest.approx(np.linalg.norm(numeric), rel=1e-5)


def test_without_scaling_the_gradient_vanishes_as_d_k_grows():
    without, with_ = scaling.gradient_by_width()
    assert without[0] == pytest.approx(with_[0])  # d_k = 1: dividing by 1 changes nothing
    assert without[-1] < with_[-1] / 5
    assert max(with_) < 1.5 * min(with_)  # scaled: the same size at every width


def test_a_real_heads_scores_multiplied_back_and_softmaxed(own_translator_trace):
    trace = own_translator_trace
    live = scaling.trace_scaling(trace, "decoder.self", 1, 2)
    assert live.sqrt_dk == pytest.approx(math.sqrt(128 / 4))
    allowed = trace.mask("decoder.self", 1)
    scores = trace.scores("decoder.self", 1, 2).astype(np.float64)
    np.testing.assert_allclose(live.raw[allowed], scores[allowed] * math.sqrt(32))
    assert np.isnan(live.raw[~allowed]).all()
    assert live.raw_spread == pytest.approx(live.scaled_spread * math.sqrt(32))
    for row in range(allowed.shape[0]):
        keep = allowed[row]
        raw = scores[row, keep] * math.sqrt(32)
        expected = np.exp(raw - raw.max()) / np.exp(raw - raw.max()).sum()
        np.testing.assert_allclose(live.raw_weights[row, keep], expected, atol=1e-9)
        assert (live.raw_weights[row, ~keep] == 0).all()
    # the weights the model computed are softmax of the scores it kept
    kept = np.where(allowed, scores, -np.inf)
    np.testing.assert_allclose(live.weights, scaling.softmax(kept), atol=1e-5)
    assert live.raw_peak >= live.peak


@pytest.fixture(scope="module")
def own_translator_trace():
    from model import load

    return load("own-translator", device="cpu").trace("The cat sat on the mat")


# --- figures -----------------------------------------------------------------------------------

def test_numbers_are_written_as_the_lesson_writes_them():
    assert numbers.number(0.7) == "0.7" and numbers.number(-3.0) == "-3"
    assert numbers.number(0.30285, 2) == "0.30" and numbers.number(-0.001, 2) == "0.00"
    assert nums.vector([0.85, 1.25], 2) == "[0.85, 1.25]"
    assert numbers.significant(3.340228e-05) == "0.000033" and numbers.significant(0.3222) == "0.32"
    assert numbers.significant(2980.96, 4) == "2981"
    assert (nums.matrix_tex([[1, 0], [0.7, 0.7]])
            == r"\begin{bmatrix}1 & 0 \\ 0.7 & 0.7\end{bmatrix}")


def test_the_hand_fig_show_the_weights_and_the_output():
    steps = hand.hand_steps(hand.seed_inputs(), decimals=2)
    bars = hand_fig.hand_weights(["cat", "chases", "mouse", "it"], steps.weights, 2)
    assert list(bars.data[0].text) == ["0.30", "0.15", "0.25", "0.30"]
    mix = hand_fig.value_mix(["cat", "chases", "mouse", "it"], V, steps.weights, steps.output)
    star = next(t for t in mix.data if t.marker.symbol == "star")
    assert (star.x[0], star.y[0]) == (0.85, 1.25)
    with pytest.raises(ValueError):
        hand_fig.value_mix(["a"], [[1, 2, 3]], [1.0], [1, 2])


def test_the_scaling_fig_keep_repeated_tokens_apart_and_measure_the_spread():
    tokens = ["The", "cat", "sat", "on", "the", "mat"]
    weights = np.full((6, 6), 1 / 6)
    fig = scaling_fig.scaling_heatmaps(weights, weights, tokens, tokens, math.sqrt(32))
    assert len(fig.data) == 2 and list(fig.data[0].y) == list(range(6))
    assert list(fig.layout.yaxis.ticktext) == tokens
    products = scaling.dot_products(64)
    spread = scaling_fig.dot_product_spread(products, 64)
    assert f"{products.std():.2f}" in spread.layout.annotations[0].text


# --- the pages ----------------------------------------------------------------------------------

def markdowns(at) -> list[str]:
    return [shown(m.value) for m in at.markdown]


def bold_numbers(text: str) -> list[float]:
    """The numbers written in bold in a markdown text (``**0.30**``, ``**[0.85, 1.25]**``)."""
    found = []
    for bold in re.findall(r"\*\*([^*]+)\*\*", text):
        found += [float(x) for x in re.findall(r"-?\d+\.\d+", bold)]
    return found


def shown_results(at) -> tuple[list[float], list[float]]:
    """The weights (step 5: each eˣ over the sum) and the output (step 7) the 4.3 page shows."""
    texts = markdowns(at)
    weights = next(t for t in texts if t.startswith("- ") and t.count(" / ") >= 2
                   and "= **" in t and "%)" in t)
    output = next(t for t in texts if t.count("] + [") >= 1 and "= **[" in t)
    return bold_numbers(weights), bold_numbers(output)


def test_the_hand_page_shows_the_lessons_numbers_under_its_rounding():
    at = app_test("lesson_hand")
    assert not at.exception, at.exception
    weights, output = shown_results(at)
    assert weights == [0.30, 0.15, 0.25, 0.30]
    assert output == [0.85, 1.25]
    texts = "\n".join(markdowns(at))
    assert "**6.71**" in texts and "**[0.85, 1.25]**" in texts
    assert "0.30" in shown(at.success[0].value)  # attention() ran on the same numbers
    latex = "\n".join(element.value for element in at.latex)
    assert r"\begin{bmatrix}0.85 & 1.25\end{bmatrix}" in latex  # the matrix form agrees
    code = "\n".join(element.value for element in at.code)
    assert "F.softmax(scores, dim=-1)" in code and "torch.matmul(weights, V)" in code


def test_the_hand_page_shows_the_exact_numbers():
    at = app_test("lesson_hand")
    at.radio(key="hand_rounding").set_value("exact").run()
    weights, output = shown_results(at)
    expected_weights, expected_output = numpy_attention(Q, K, V)
    assert weights == [round(w, 4) for w in expected_weights]  # 0.3029 0.1493 0.2450 0.3029
    assert output == [round(o, 4) for o in expected_output]  # 0.8507 1.2408
    np.testing.assert_allclose(weights, SPEC_WEIGHTS, atol=1.5e-4)
    np.testing.assert_allclose(output, SPEC_OUTPUT, atol=1.5e-4)


@pytest.mark.parametrize("q", [(0.3, 0.9), (-1.5, 2.0), (0.0, 0.0)])
def test_editing_q_gives_what_numpy_gives(q):
    at = app_test("lesson_hand", hand_rounding="exact")
    at.number_input(key="hand_q1").set_value(q[0]).run()
    at.number_input(key="hand_q2").set_value(q[1]).run()
    assert not at.exception and not at.error
    weights, output = shown_results(at)
    expected_weights, expected_output = numpy_attention(np.array(q), K, V)
    np.testing.assert_allclose(weights, expected_weights, atol=5.1e-5)
    np.testing.assert_allclose(output, expected_output, atol=5.1e-5)
    torch_says = shown(at.success[0].value)
    assert f"[{expected_output[0]:.4f}, {expected_output[1]:.4f}]" in torch_says


def test_editing_keys_and_values_in_the_table_gives_what_numpy_gives():
    edits = {"edited_rows": {1: {"k1": 2.0, "v2": -1.0}}, "added_rows": [
        {"word": "dog", "k1": 0.5, "k2": -0.5, "v1": 4.0, "v2": 4.0}], "deleted_rows": [3]}
    at = app_test("lesson_hand", hand_rounding="exact", hand_table=edits)
    assert not at.exception and not at.error
    keys = np.array([[1.0, 0.0], [2.0, 1.0], [0.7, 0.7], [0.5, -0.5]])
    values = np.array([[2.0, 1.0], [0.0, -1.0], [1.0, 2.0], [4.0, 4.0]])
    weights, output = shown_results(at)
    expected_weights, expected_output = numpy_attention(Q, keys, values)
    np.testing.assert_allclose(weights, expected_weights, atol=5.1e-5)
    np.testing.assert_allclose(output, expected_output, atol=5.1e-5)
    assert any("- **dog**: " in t for t in markdowns(at))


@pytest.mark.parametrize("state, message", [
    ({"hand_q1": None}, "q, entry 1 is empty"),
    ({"hand_table": {"edited_rows": {2: {"k2": None}}}}, "empty"),
    ({"hand_table": {"edited_rows": {2: {"v1": "abc"}}}}, "not a number"),
    ({"hand_table": {"deleted_rows": [0, 1, 2, 3]}}, "no word left"),
    ({"hand_table": {"added_rows": [{"word": "x", "k1": 1.0}]}}, "empty"),
])
def test_bad_edits_on_the_page_give_a_message_not_a_traceback(state, message):
    at = app_test("lesson_hand", **state)
    assert not at.exception, at.exception
    assert message in messages(at.error)
    assert at.get("page_link")  # the lesson's links are still there


@pytest.mark.parametrize("key, value", [
    ("hand_table", "zzz"), ("hand_table", {"edited_rows": {99: {"k1": 1.0}}}),
    ("hand_table", {"edited_rows": {0: {"nope": 1.0}}}), ("hand_q1", "abc"),
    ("hand_q2", float("nan")), ("hand_q1", 1e9), ("hand_step", 99), ("hand_step", "x"),
    ("hand_rounding", "nope"),
])
def test_the_hand_page_survives_any_remembered_value(key, value):
    at = app_test("positions")
    at.session_state[key] = value
    at.switch_page("app_pages/lessons/hand.py").run()
    assert not at.exception, at.exception
    assert not at.error
    if value == "x":  # not a step: back to the first, which shows the dot products only
        assert at.slider(key="hand_step").value == 1
        return
    weights, output = shown_results(at)
    assert output in ([0.85, 1.25], [0.8507, 1.2408])


@pytest.mark.parametrize("present", [True, False])
def test_the_hand_page_starts_at_the_first_step(present):
    at = fresh_app_test("lesson_hand", present=present)
    assert not at.exception
    assert at.slider(key="hand_step").value == 1
    headings = [t for t in markdowns(at) if t.startswith("#### ")]
    assert len(headings) == 1 and "dot products" in headings[0]
    at.button(key="hand_step_next").click().run()
    assert len([t for t in markdowns(at) if t.startswith("#### ")]) == 2


def test_the_scaling_page_shows_the_lessons_saturated_softmax_and_the_spread():
    at = app_test("lesson_scaling")
    assert not at.exception, at.exception
    texts = "\n".join(markdowns(at))
    assert "**[1.000, 0.000]**" in texts  # the lesson's 8, −3 without scaling
    assert "2981" in texts and "0.05" in texts
    assert len(figures(at)) == 5
    at.select_slider(key="scale_dk").set_value(512).run()
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["measured spread of q·k"]) == pytest.approx(math.sqrt(512), rel=0.1)
    assert float(metrics["√d_k"]) == pytest.approx(math.sqrt(512), abs=0.005)


def test_the_scaling_page_follows_its_scores_and_a_real_head():
    at = app_test("lesson_scaling")
    at.number_input(key="scale_s1").set_value(2.0).run()
    at.number_input(key="scale_s2").set_value(1.0).run()
    direct = np.exp([2.0, 1.0]) / np.exp([2.0, 1.0]).sum()
    assert f"**[{direct[0]:.3f}, {direct[1]:.3f}]**" in "\n".join(markdowns(at))
    at.selectbox(key="scale_kind").set_value("decoder.cross").run()
    at.selectbox(key="scale_layer").set_value(2).run()
    metrics = {m.label: float(m.value) for m in at.metric}
    assert metrics["spread before ÷√d_k"] == pytest.approx(
        metrics["spread after ÷√d_k"] * math.sqrt(32), rel=0.01)


@pytest.mark.parametrize("key, value", [
    ("scale_dk", 3), ("scale_dk", "x"), ("scale_s1", "abc"), ("scale_s1", float("inf")),
    ("scale_kind", "encoder.cross"), ("scale_layer", 9), ("scale_head", 11),
])
def test_the_scaling_page_survives_any_remembered_value(key, value):
    at = app_test("positions")
    at.session_state[key] = value
    at.switch_page("app_pages/lessons/scaling.py").run()
    assert not at.exception, at.exception
    assert len(figures(at)) == 5


NOT_A_NUMBER = "is empty or not a number: write a number from −100 to 100."


@pytest.mark.parametrize("page, key, name", [
    ("lesson_scaling", "scale_s1", "first score"), ("lesson_scaling", "scale_s2", "second score"),
    ("lesson_hand", "hand_q1", "q, entry 1"), ("lesson_hand", "hand_q2", "q, entry 2"),
])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), None])
def test_a_number_box_given_no_finite_number_says_the_range_and_shows_no_result(page, key,
                                                                                name, value):
    at = app_test(page)
    at.session_state[key] = value  # what the browser sends, through the box, on a rerun
    at.run()
    assert not at.exception, at.exception
    assert [shown(e.value) for e in at.error] == [f"{name} {NOT_A_NUMBER}"]
    assert at.number_input(key=key).value is None  # the box shows no number, not −100
    texts = "\n".join(markdowns(at))
    assert "softmax ≈" not in texts and "#### Step" not in texts  # no result of another number
    assert not at.success
    # a number again brings the result back
    at.number_input(key=key).set_value(2.0).run()
    assert not at.error and ("softmax ≈" in "\n".join(markdowns(at)) or at.success)


@pytest.mark.parametrize("page, key, default", [("lesson_scaling", "scale_s1", 8.0),
                                                ("lesson_hand", "hand_q2", 0.0)])
@pytest.mark.parametrize("value", [1000.0, -100.5, 1e300])
def test_a_number_out_of_range_is_refused_with_the_range_and_the_result_follows_the_box(
        page, key, default, value):
    at = app_test(page)
    at.number_input(key=key).set_value(value).run()  # a box without bounds sends it
    assert not at.exception, at.exception
    assert "which is not a number from −100 to 100; it is back to the lesson's" in messages(
        at.warning)
    assert at.number_input(key=key).value == default  # the box and the result agree
    if page == "lesson_scaling":
        assert "**[1.000, 0.000]**" in "\n".join(markdowns(at))  # the lesson's 8, −3
    else:
        assert shown_results(at)[1] == [0.85, 1.25]
    at.number_input(key=key).set_value(100.0).run()  # the edge of the range is a number
    assert not at.warning and not at.error


# --- 中文 --------------------------------------------------------------------------------------

@pytest.mark.parametrize("page", ["lesson_hand", "lesson_scaling"])
def test_the_lessons_render_in_chinese_with_nothing_left_in_english(page):
    from tests.app.test_i18n import LATIN_OK, english_words, visible_strings

    allowed = LATIN_OK | {w.lower() for w in SEED_SENTENCE.split()}  # the sidebar's example
    i18n.missing().clear()
    with i18n.use("zh"):
        at = app_test(page, lang="zh")
    assert not at.exception, at.exception
    assert not i18n.missing(), sorted(i18n.missing())[:10]
    left = {text[:80]: words for text in visible_strings(at)
            if (words := english_words(text, allowed))}
    assert not left, left
    if page == "lesson_hand":
        steps = "\n".join(markdowns(at))
        assert all(f"**{word}**" in steps for word in ("猫", "追", "老鼠", "它"))
        weights, output = shown_results(at)
        assert weights == [0.30, 0.15, 0.25, 0.30] and output == [0.85, 1.25]
    else:
        assert "**[1.000, 0.000]**" in "\n".join(markdowns(at))


def test_the_lessons_pages_in_english_show_no_chinese_but_the_lessons_words():
    for page in ("lesson_hand", "lesson_scaling"):
        at = app_test(page, lang="en")
        from tests.app.test_i18n import visible_strings

        chinese = [t for t in visible_strings(at) if re.search(r"[\u4e00-\u9fff]", t)
                   and not any(word in t for word in ("猫", "中文"))]
        assert not chinese, chinese[:3]
