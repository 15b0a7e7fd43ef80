"""Controls that survive their options changing, examples that work, a landing, charts for both
themes, long inputs, one convention for decoder rows, and warnings where a tokenizer loses the
input."""

from __future__ import annotations

import numpy as np
import pytest

from app_pages.frame.navigation import script
from tests.helpers import app_test, messages, shown

# Widgets whose options depend on the model, the text or the step, with a value out of range,
# and the value each falls back to (own-random on the seed sentence: 6 layers of 8 heads, 6
# tokens; Translate: own-translator, 3 decoder layers, 6 steps): a select box its first option
# (Translate's layer its last), a slider the nearest end, a multiselect what it still offers or
# its default, a span its default. A window slider is drawn only for long inputs: the seed
# sentence shows every token and leaves the value unread.
STALE = [
    ("explore", "kind", "encoder.cross", "encoder.self"), ("explore", "layer", 9, 0),
    ("explore", "head", 11, 0),
    ("head_view", "hv_layer", 9, 0), ("head_view", "hv_heads", [0, 12], [0]),
    ("head_view", "hv_focus", 40, None), ("head_view", "hv_window", 500, 500),
    ("mask", "mask_layer", 9, 0), ("mask", "mask_head", 9, 0),
    ("mask", "mask_window", 100, 100),
    ("rollout", "ro_layer", 9, 5), ("model_view", "mv_kind", "x", "encoder.self"),
    ("stats", "st_metric", "nope", "entropy"), ("stats", "agg_layers", [7], [5]),
    ("stats", "agg_heads", [70], list(range(8))),
    ("stats", "span_q", (0, 99), (3, 6)), ("stats", "span_k", 3, (0, 3)),
    ("translate", "step", 99, 6), ("translate", "dec_layer", 7, 2),
    ("translate", "dec_head", 9, "average"),
    ("translate", "example", "zzz", "The cat sat on the mat"),
    ("positions", "pe_positions", 1000, 256), ("positions", "pe_d_model", 7, 128),
]


@pytest.mark.parametrize("page, key, value, fallback", STALE)
def test_a_remembered_value_out_of_the_new_range_falls_back_to_its_default_or_nearest(
        page, key, value, fallback):
    """Every model-, text- or step-dependent widget, given a value its options lack.

    The value is set while another page shows, as a browser holding an old value sends it
    back later. Unclamped, the slider cases would raise (StreamlitValueAboveMaxError); AppTest
    itself resets select boxes, so their stale display in a browser is reproduced by
    tests/browser/test_explore.py::test_after_switching_models_the_selectors_show_what_the_page_draws."""
    at = app_test("shapes" if page == "positions" else "positions", model_choice="own-random")
    at.session_state[key] = value
    at.switch_page(script(page)).run()
    assert not at.exception, at.exception[0].value
    assert at.get("plotly_chart")
    assert at.session_state[key] == fallback


def test_multiselects_keep_what_is_still_offered_or_fall_back_to_their_default():
    at = app_test("stats", model_choice="own-random")
    assert at.multiselect(key="agg_layers").value == [5]
    at.selectbox(key="model_choice").set_value("own-translator").run()
    assert at.multiselect(key="agg_layers").value == [2]  # own-translator's last layer
    assert len(at.get("plotly_chart")) >= 3  # the aggregate is still drawn
    at = app_test("head_view", model_choice="own-random")
    at.multiselect(key="hv_heads").set_value([1, 6, 7]).run()
    at.selectbox(key="model_choice").set_value("own-translator").run()
    assert at.multiselect(key="hv_heads").value == [1]
    at = app_test("head_view", model_choice="own-random")
    at.multiselect(key="hv_heads").set_value([6, 7]).run()
    at.selectbox(key="model_choice").set_value("own-translator").run()
    assert at.multiselect(key="hv_heads").value == [0, 1]
    assert not at.info  # not "Choose at least one head"


def test_switching_to_a_model_with_fewer_heads_keeps_explore_on_a_head_it_has():
    """AppTest resets the select boxes by itself (this holds even without the fallback); the
    browser test reproduces the stale display."""
    at = app_test("explore", model_choice="own-random")
    at.selectbox(key="kind").set_value("decoder.cross").run()
    at.selectbox(key="layer").set_value(5).run()
    at.selectbox(key="head").set_value(7).run()
    at.switch_page("app_pages/views/positions.py").run()
    at.selectbox(key="model_choice").set_value("own-translator").run()
    at.switch_page("app_pages/views/explore.py").run()
    assert not at.exception
    assert (at.selectbox(key="kind").value, at.selectbox(key="layer").value,
            at.selectbox(key="head").value) == ("encoder.self", 0, 0)


def test_another_sentence_starts_the_stepper_at_its_first_step():
    """A step chosen on one translation is not carried to another: the slider, and what the
    page shows, go back to the first word (a step past a shorter translation's end, too)."""
    at = app_test("translate")
    at.selectbox(key="example").set_value(
        "The cat chased the mouse because it was hungry").run()
    at.slider(key="step").set_value(9).run()
    at.selectbox(key="example").set_value("The cat sat on the mat").run()
    assert not at.exception
    assert at.slider(key="step").value == 1
    assert any(m.value == "### 猫 …" for m in at.markdown)
    assert app_test("translate", step=99).slider(key="step").value == 6  # a step past the end
    # (a link's, an old one) is the last step of 猫 坐 在 垫子 上 <eos>


def test_choosing_an_example_translates_it():
    at = app_test("translate")
    at.selectbox(key="example").set_value("The small dog slept under the table yesterday").run()
    assert at.text_input(key="translate_text").value == (
        "The small dog slept under the table yesterday")
    # the heading grows with the steps: no later word is given away before its step
    assert any(m.value == "### 小 …" for m in at.markdown)
    at.slider(key="step").set_value(8).run()
    assert any(m.value == "### 小 狗 昨天 睡 在 桌子 下" for m in at.markdown)
    at.text_input(key="translate_text").set_value("The cat sat on the mat").run()
    # a translation of another length is a new stepper: it starts at the first step
    assert at.slider(key="step").value == 1
    assert any(m.value == "### 猫 …" for m in at.markdown)


def test_decoder_rows_are_the_word_written_on_explore_and_translate_alike():
    from tests.helpers import figures, plotly_array

    explore = app_test("explore", model_choice="own-translator")
    explore.selectbox(key="kind").set_value("decoder.cross").run()
    explore.selectbox(key="layer").set_value(2).run()
    heatmap = figures(explore)[0]
    rows = heatmap["layout"]["yaxis"]["ticktext"]
    assert rows[:5] == ["猫", "坐", "在", "垫子", "上"] and "eos" in rows[5]
    assert heatmap["layout"]["yaxis"]["title"]["text"] == "query: the word being written"
    hover = heatmap["data"][0]["customdata"]
    assert hover[3][0][0] == "3: writes 垫子 (reads 在)"
    translate = app_test("translate", step=6)  # the last step: every row written
    alignment = figures(translate)[2]
    assert alignment["layout"]["yaxis"]["ticktext"] == rows
    # the row that wrote 垫子 looks at "mat" on both pages
    z = plotly_array(alignment["data"][0]["z"])
    source = alignment["layout"]["xaxis"]["ticktext"]
    assert source[int(np.argmax(z[3]))] == "mat"


LONG = " ".join(f"w{i % 97}" for i in range(275))  # 275 words, each own-random's token


def test_a_long_input_is_fitted_and_its_labels_thinned_to_what_fits():
    from tests.helpers import figures
    from viz.labels import labels_that_fit
    from viz.sizes import SCREEN_PLOT_PX

    at = app_test("explore", model_choice="own-random", text=LONG)
    assert not at.exception
    heatmap = figures(at)[0]
    assert heatmap["layout"]["coloraxis"]["cmax"] < 1  # fitted by default above 32 tokens
    assert any("fitted to this layer" in c.value for c in at.caption)
    x_labels = heatmap["layout"]["xaxis"]["ticktext"]
    assert 10 <= len(x_labels) <= labels_that_fit(SCREEN_PLOT_PX)
    at.radio(key="colour_scale").set_value("full").run()
    assert figures(at)[0]["layout"]["coloraxis"]["cmax"] == 1


def test_rollout_can_leave_the_attention_sink_out_and_says_so():
    from tests.helpers import figures, plotly_array

    at = app_test("rollout", model_choice="own-random")
    at.radio(key="ro_first").set_value("leave out").run()
    fig = figures(at)[0]
    z = plotly_array(fig["data"][0]["z"])
    assert z.shape == (6, 5) and "first token left out" in fig["layout"]["title"]["text"]
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-6)


def test_leaving_the_first_token_out_rescales_what_is_left():
    from model.analysis.rollout import first_token_share, without_first_token

    sink = np.array([[1.0, 0.0, 0.0], [0.8, 0.2, 0.0], [0.9, 0.05, 0.05]])
    assert first_token_share(sink) == pytest.approx(0.9)
    np.testing.assert_allclose(without_first_token(sink), [[0, 0], [1, 0], [0.5, 0.5]])


def test_the_off_diagonal_peak_skips_each_tokens_own_share():
    from model.analysis.rollout import off_diagonal_peak

    flow = np.array([[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.1, 0.2, 0.7]])
    assert off_diagonal_peak(flow) == pytest.approx(0.3)
    assert off_diagonal_peak(flow[:, 1:], key_offset=1) == pytest.approx(0.2)


def test_the_app_opens_on_a_landing_that_says_what_to_click():
    from app_pages.frame.navigation import PAGES
    from tests.helpers import figures

    at = app_test()
    assert not at.exception
    assert at.title[0].value == "Attention Explorer"
    text = " ".join(m.value for m in at.markdown)
    assert "attention" in text and "Text" in text  # what it is, and where to type
    links = [link.proto.label for link in at.get("page_link")]
    assert links[:2] == ["Watch a translation", "Explore one head"]
    (alignment,) = figures(at)
    assert alignment["layout"]["yaxis"]["ticktext"][:5] == ["猫", "坐", "在", "垫子", "上"]
    assert [p.title for p in PAGES[:3]] == ["Start here", "Translate", "Explore"]
    assert at.selectbox(key="model_choice").value == "own-translator"  # a trained default


def test_a_model_with_random_weights_says_so_on_the_page():
    random = app_test("explore", model_choice="own-random")
    assert any("random weights" in info.value for info in random.info)
    trained = app_test("explore", model_choice="own-translator")
    assert not any("random weights" in info.value for info in trained.info)


def test_captions_name_the_lesson_and_its_section_in_words():
    import ast
    import re

    from tests.helpers import ROOT

    for page in sorted((ROOT / "app_pages").glob("*.py")):
        tree = ast.parse(page.read_text(encoding="utf-8"))
        docstring = ast.get_docstring(tree)
        shown = "".join(node.value for node in ast.walk(tree)  # implicit concatenation joins
                        if isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and node.value != docstring)
        assert not re.search(r"\b[Ss]eed \d", shown), page.name
        # each section cited is followed by what it is about (the landing explains the numbers)
        for cited in re.findall(r"(?<!such as )§\d+\.\d+.{0,3}", shown):
            assert re.match(r"§\d+\.\d+[,:] \w", cited), (page.name, cited)


def test_english_only_models_say_what_they_read_when_given_chinese():
    at = app_test("explore", model_choice="own-translator", text="猫坐在垫子上")
    message = shown(at.error[0].value)
    assert "“猫坐在垫子上”" in message and "reads English words" in message
    assert "The cat sat on the mat" in message
    at = app_test("explore", model_choice="own-translator", target="猫坐在垫子上")
    message = shown(at.error[0].value)
    assert "target" in message and "separated by spaces" in message
    assert "猫 坐 在 垫子 上" in message


def test_characters_split_into_byte_pieces_are_pointed_out(tiny_checkpoints):
    at = app_test("explore", model_choice="other…", model_other=str(tiny_checkpoints["llama"]),
                  text="The dog 狗 sat")  # 狗 is not in the tiny tokenizer's merges
    assert not at.exception
    notes = messages(at.info)
    assert "split over several tokens" in notes and "labelled like 狗[1/3]" in notes


def test_unknown_tokens_are_counted_with_the_text_they_replaced():
    from model import AttentionTrace
    from model.analysis.tokens import token_notes

    weights = np.full((1, 1, 4, 4), 0.25, dtype=np.float32)
    trace = AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                           n_heads=1, n_kv_heads=1, tokens=["[CLS]", "[UNK]", "cat", "[UNK]"],
                           ids=[1, 0, 5, 0], unknown={"tokens": {1: "猫", 3: "狗"}})
    (note,) = token_notes(trace)
    assert (note.kind, note.count, note.total, note.examples) == ("unknown", 2, 4, ["猫", "狗"])


def test_unknown_tokens_survive_the_export(tmp_path):
    from model import AttentionTrace

    weights = np.full((1, 1, 2, 2), 0.5, dtype=np.float32)
    trace = AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                           n_heads=1, n_kv_heads=1, tokens=["[UNK]", "cat"], ids=[0, 5],
                           unknown={"tokens": {0: "猫"}})
    assert AttentionTrace.load(trace.save(tmp_path / "t.npz")).unknown == {"tokens": {0: "猫"}}
    with pytest.raises(ValueError, match="fall outside"):
        AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                       n_heads=1, n_kv_heads=1, tokens=["a", "b"], ids=[1, 2],
                       unknown={"tokens": {2: "x"}})


@pytest.mark.slow
def test_minilm_warns_when_chinese_characters_become_unknown():
    at = app_test("explore", model_choice="minilm", text="猫坐在垫子上 the cat")
    warning = messages(at.warning)
    # minilm knows 子 and 上 but not 猫, 坐, 在 or 垫
    assert "4 of 10 tokens are [UNK]" in warning and "猫 坐 在 垫." in warning
    assert "smollm2 reads any language and script" in warning  # and where to go instead


def test_spans_default_to_whole_sentences_and_name_their_tokens():
    from model.analysis.cuts import boundary_label, sentence_split

    tokens = ["The", "cat", "sat", ".", "It", "slept", "."]
    assert sentence_split(tokens) == 4  # after the first full stop, not mid-sentence
    assert sentence_split(["a", "b", "c", "d"]) == 2  # no sentence end: the middle
    bert = ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    assert sentence_split(bert, special=[0, 5]) == 3  # one sentence: no cut after its "."
    pair = ["[CLS]", "a", "cat", ".", "[SEP]", "it", "sat", ".", "[SEP]"]
    assert sentence_split(pair, special=[0, 4, 8]) == 5  # after the first sentence's [SEP]
    assert boundary_label(tokens, 4) == "4 · It" and boundary_label(tokens, 7) == "end"
    at = app_test("stats", model_choice="own-random", text="The cat sat . It slept .")
    assert at.select_slider(key="span_q").value == (4, 7)
    assert at.select_slider(key="span_k").value == (0, 4)
    from model import load
    from model.analysis.statistics import aggregate, span_attention

    trace = load("own-random", device="cpu").trace("The cat sat . It slept .")
    mean = aggregate(trace, "encoder.self", [5], range(8))  # the page's default layers, heads
    _, mass = span_attention(mean, (4, 7), (0, 4))
    assert [m.value for m in at.metric] == [f"{mass:.1%}"]


def test_parameter_shares_are_plain_numbers_not_rises():
    at = app_test("shapes", model_choice="own-translator")
    shares = [m for m in at.metric if "of all" in str(m.proto.delta)]
    assert len(shares) == 4
    assert all(m.proto.direction == m.proto.MetricDirection.NONE for m in shares)  # no arrow


def test_rope_positions_are_written_on_the_outer_circle_only():
    import viz
    from model.analysis.positions import rope_thetas

    fig = viz.rope_circles(rope_thetas(64)[[0, 4, 12]], 16)
    circles = [t for t in fig.data if t.mode == "lines+markers+text"]
    written = [[label for label in t.text if label] for t in circles]
    assert written[0] == [str(p) for p in range(8)] and not any(written[1:])


def test_an_example_chosen_after_typing_replaces_the_typed_sentence():
    at = app_test("translate")
    at.text_input(key="translate_text").set_value("The dog slept").run()
    assert at.selectbox(key="example").value == "(your own sentence)"
    at.selectbox(key="example").set_value("The cat sat on the mat").run()
    assert at.text_input(key="translate_text").value == "The cat sat on the mat"
    at.slider(key="step").set_value(6).run()
    assert any(m.value == "### 猫 坐 在 垫子 上" for m in at.markdown)
    at.text_input(key="translate_text").set_value("The zebra slept").run()
    message = shown(at.error[0].value)
    assert "vocabulary above" in message and "sidebar" not in message


def test_a_rollout_view_leaves_the_sink_out_only_when_asked_or_dominant():
    from model.analysis.rollout import rollout_view

    sink = np.array([[1.0, 0.0, 0.0], [0.8, 0.2, 0.0], [0.9, 0.05, 0.05]])
    allowed = np.tril(np.ones((3, 3), bool))
    auto = rollout_view(sink, allowed, ["<s>", "a", "b"], [0])
    assert auto.left_out and auto.key_tokens == ["a", "b"] and auto.key_special == []
    assert auto.allowed.shape == (3, 2) and auto.zmax == 1.0
    kept = rollout_view(sink, allowed, ["<s>", "a", "b"], [0], first="keep")
    assert not kept.left_out and kept.flow.shape == (3, 3)
    spread = np.full((3, 3), 1 / 3)
    assert not rollout_view(spread, allowed, ["x", "a", "b"], []).left_out
    fitted = rollout_view(spread, allowed, ["x", "a", "b"], [], fit_above=2)
    assert fitted.zmax == pytest.approx(1 / 3)
