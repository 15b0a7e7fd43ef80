"""The Corpus and Compare pages under AppTest: batches from files and pasted lines with
progress shown, a clear message for every bad file, and comparisons."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.helpers import app_test, figures, messages, plotly_array

SENTENCES = [f"The cat number {i} sat on the mat because it was tired." for i in range(200)]


def _corpus(**state):
    return app_test("corpus", **state)


def _upload(at, *files):
    at.file_uploader(key="cp_files").set_value(list(files)).run()
    return at


@pytest.mark.slow
def test_a_200_sentence_file_runs_with_progress_and_opens_a_sentence_in_explore():
    at = _upload(_corpus(model_choice="minilm"),
                 ("class.txt", "\n".join(SENTENCES).encode(), "text/plain"))
    assert not at.exception and not at.error, messages(at.error)
    assert at.button(key="cp_run").label == "Run 200 sentences"
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error, messages(at.error)
    bar = at.get("progress")[0]
    assert bar.value == 100 and "Ran 200 sentences" in bar.proto.text
    assert "200 of 200 sentences ran on minilm" in messages(at.success)
    heatmap = figures(at)[0]
    mean = plotly_array(heatmap["data"][0]["z"])
    assert mean.shape == (6, 12) and np.isfinite(mean).all()
    assert "mean over 200 sentences" in heatmap["layout"]["title"]["text"]
    assert "%{text}" in heatmap["data"][0]["hovertemplate"]
    assert heatmap["data"][0]["text"][0][0].startswith("95% CI ")
    assert heatmap["data"][0]["text"][0][0].endswith(" · 200 sentences")
    ranked = at.dataframe[0].value
    assert len(ranked) == 72 and ranked.iloc[0, 2] >= ranked.iloc[-1, 2]
    table = at.dataframe(key="cp_table").value
    assert len(table) == 200 and table.iloc[0, 0] == SENTENCES[0]
    tokens = table.iloc[0, 1].split(" · ")  # as minilm read it: [CLS] the cat number 0 …
    assert tokens[:4] == ["[CLS]", "the", "cat", "number"] and tokens[-1] == "[SEP]"
    assert table.iloc[0, 2] == len(tokens)

    at.session_state["cp_table"] = {"selection": {"rows": [4], "columns": []}}
    at.run()
    at.button(key="cp_open").click().run()  # Explore, the first view offered
    assert not at.exception
    assert at.session_state["text"] == SENTENCES[4]
    assert at.session_state["layer"] == 0 and at.session_state["head"] == 0


@pytest.mark.slow
def test_a_row_opens_in_the_causal_mask_view_at_the_chosen_head():
    at = _upload(_corpus(model_choice="minilm"),
                 ("class.txt", "\n".join(SENTENCES[:5]).encode(), "text/plain"))
    at.button(key="cp_run").click().run()
    at.selectbox(key="cp_layer").set_value(3).run()
    at.selectbox(key="cp_head").set_value(7).run()
    at.session_state["cp_table"] = {"selection": {"rows": [2], "columns": []}}
    at.run()
    at.selectbox(key="cp_view").set_value("app_pages/views/mask.py").run()
    at.button(key="cp_open").click().run()
    assert not at.exception
    assert at.session_state["text"] == SENTENCES[2]
    assert (at.session_state["mask_layer"], at.session_state["mask_head"]) == (3, 7)
    assert "Causal mask" in " ".join(t.value for t in at.title)


@pytest.mark.slow
def test_a_csv_column_and_span_attention_run():
    rows = ["id,sentence,label"] + [f'{i},"The dog saw the cat, and it ran.",x' for i in range(30)]
    at = _upload(_corpus(model_choice="minilm", cp_queries="it", cp_keys="cat|dog"),
                 ("pairs.csv", "\n".join(rows).encode(), "text/csv"))
    assert at.selectbox(key="cp_column_pairs.csv").value == "sentence"
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error, messages(at.error)
    bar = at.get("progress")[0]
    assert bar.value == 100 and "Ran 30 sentences" in bar.proto.text
    at.selectbox(key="cp_metric").set_value("span").run()
    heatmap = figures(at)[0]
    title = " ".join(re.sub(r"<[^>]+>", " ", heatmap["layout"]["title"]["text"]).split())
    assert "from the query tokens it to the key tokens cat|dog" in title  # however it wraps
    mass = plotly_array(heatmap["data"][0]["z"])
    assert ((mass > 0) & (mass < 1)).all()
    at.selectbox(key="cp_column_pairs.csv").set_value("label").run()  # not run yet
    assert "30 sentences ready" in " ".join(c.value for c in at.caption)


def test_pasted_lines_are_sentences_and_a_stale_column_choice_is_survived():
    at = _corpus(cp_pasted="the cat sat on the mat\n\nthe dog slept\n",
                 **{"cp_column_d.jsonl": "gone"})
    assert not at.exception
    assert at.button(key="cp_run").label == "Run 2 sentences"
    data = json.dumps({"en": "the cat sat", "n": 1}).encode()
    _upload(at, ("d.jsonl", data, "application/json"))
    assert not at.exception and at.selectbox(key="cp_column_d.jsonl").value == "en"
    assert at.button(key="cp_run").label == "Run 3 sentences"


@pytest.mark.parametrize("name, data, message", [
    ("photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "photo.txt is a binary file"),
    ("latin.txt", "café crème".encode("latin-1") + b"\xff", "neither UTF-8 nor GB18030"),
    ("empty.txt", b"", "empty.txt holds no sentences"),
    ("header.csv", b"id,sentence\n", "header.csv holds no sentences"),
    ("numbers.jsonl", b'{"n": 1}\n{"n": 2}\n', "numbers.jsonl has no field holding text"),
    ("long.txt", ("the cat sat " * 120).encode(), "sentence 1 is 360 tokens long"),
])
def test_a_bad_file_gives_a_clear_message_and_no_exception(name, data, message):
    at = _upload(_corpus(), (name, data, "application/octet-stream"))
    assert not at.exception
    assert message in messages(at.error)
    assert not at.button  # nothing to run


def test_too_many_sentences_are_refused_with_the_limit(monkeypatch):
    from app_pages.cache.getters import limits

    monkeypatch.setenv("ATTENTION_EXPLORER_CORPUS_SENTENCES", "50")
    limits.clear()
    try:
        at = _upload(_corpus(), ("many.txt", "\n".join(SENTENCES[:60]).encode(), "text/plain"))
        assert not at.exception
        assert "many.txt holds more than 50 sentences" in messages(at.error)
        at = _corpus(cp_pasted="\n".join(SENTENCES[:51]))
        assert "51 sentences together; this server runs at most 50" in messages(at.error)
        assert "At most 50 sentences at once" in " ".join(c.value for c in at.caption)
    finally:
        monkeypatch.delenv("ATTENTION_EXPLORER_CORPUS_SENTENCES")
        limits.clear()


def test_a_bad_span_pattern_is_explained():
    at = _corpus(cp_pasted="the cat sat", cp_queries="(it", cp_keys="cat")
    assert not at.exception
    assert "is not a regular expression" in messages(at.error)


def test_a_sentence_compared_with_itself_shows_no_difference_and_ranks_no_head():
    at = app_test("compare", cmp_a="the cat sat on the mat", cmp_b="the cat sat on the mat")
    assert not at.exception
    difference = figures(at)[2]
    assert np.abs(plotly_array(difference["data"][0]["z"])).max() == 0
    assert "No head changes" in messages(at.success)


def test_a_minimal_pair_ranks_the_heads_that_change():
    at = app_test("compare")
    assert not at.exception
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles[0].startswith("A · encoder self-attention") and titles[2].startswith("B − A")
    ranked = at.dataframe[0].value
    assert len(ranked) > 0 and ranked.iloc[0, 2] >= ranked.iloc[-1, 2] > 0
    at.text_input(key="cmp_b").set_value("the cat sat on the mat").run()
    assert "do not line up" in messages(at.info)


def test_two_models_and_training_stages_are_drawn_and_survive_stale_values():
    at = app_test("compare", cmp_mode="models", cmp_model_b="no-such-model", cmp_ma_layer=99)
    assert not at.exception, at.exception
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles[0].startswith("own-translator · ") and titles[1].startswith("own-random · ")
    at.radio(key="cmp_mode").set_value("stages").run()
    assert not at.exception
    grid = figures(at)[0]
    from model.own.translator import training_stages

    panels = [a["text"] for a in grid["layout"]["annotations"] if a["text"].startswith("step")]
    assert panels == [f"step {s}" for s in training_stages()]


@pytest.mark.slow
def test_a_click_on_the_heatmap_chooses_the_head_once_and_the_boxes_stay_free():
    at = _corpus(model_choice="minilm", cp_pasted="\n".join(SENTENCES[:3]))
    at.button(key="cp_run").click().run()
    at.session_state["cp_heatmap"] = {"selection": {"points": [{"customdata": [4, 9]}],
                                                    "point_indices": [], "box": [],
                                                    "lasso": []}}
    at.run()
    assert (at.selectbox(key="cp_layer").value, at.selectbox(key="cp_head").value) == (4, 9)
    at.selectbox(key="cp_layer").set_value(1).run()  # the chart still holds its selection
    assert not at.exception
    assert at.selectbox(key="cp_layer").value == 1


PARTIAL = ["the cat sat on the mat because it was tired", "the zebra flew",
           "the dog sat on the bed because it was tired"]


def test_a_partial_run_warns_and_its_tables_have_no_blank_rows_and_write_a_dash():
    # own-translator knows neither "zebra" nor "flew": sentence 2 is left out
    at = _corpus(cp_pasted="\n".join(PARTIAL), cp_queries="it", cp_keys="cat")
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.success
    assert "2 of 3 sentences ran on own-translator" in messages(at.warning)
    assert [e.label for e in at.expander if "left out" in e.label] == ["Sentences left out: 1"]
    table = at.dataframe(key="cp_table")
    assert list(table.value.index) == [1, 3]  # numbered as pasted, no blank row for sentence 2
    assert table.value.iloc[:, 0].tolist() == [PARTIAL[0], PARTIAL[2]]
    assert (table.value.iloc[:, 1].str.len() > 0).all() and (table.value.iloc[:, 2] > 0).all()
    at.selectbox(key="cp_metric").set_value("span").run()
    table, ranked = at.dataframe(key="cp_table"), at.dataframe[0]
    span = table.value.iloc[:, -1]
    assert np.isfinite(span.loc[1]) and np.isnan(span.loc[3])  # no "cat" in sentence 3
    assert ranked.value["sentences"].eq(1).all()  # one sentence: no interval
    assert ranked.value[["95% CI low", "95% CI high"]].isna().all().all()
    assert table.proto.placeholder == ranked.proto.placeholder == "—"  # not "None"
    # a row opens the sentence it shows, whatever was left out above it
    at.session_state["cp_table"] = {"selection": {"rows": [1], "columns": []}}
    at.run()
    assert at.button(key="cp_open").label == "Open sentence 3"
    at.button(key="cp_open").click().run()
    assert not at.exception
    assert at.session_state["text"] == PARTIAL[2]


def test_a_run_where_no_sentence_ran_is_an_error_and_a_whole_run_a_success():
    at = _corpus(cp_pasted="the zebra flew")
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.success and not at.warning
    assert "0 of 1 sentences ran on own-translator" in messages(at.error)
    assert not at.get("plotly_chart")
    at.text_area(key="cp_pasted").set_value("\n".join(PARTIAL[::2])).run()
    at.button(key="cp_run").click().run()
    assert "2 of 2 sentences ran on own-translator" in messages(at.success)
    assert not at.warning and not at.error


def test_the_statistic_travels_in_the_link():
    from tests.app.test_links import link_of, opened

    at = opened("corpus", model="own-random", sentences="\n".join(PARTIAL), statistic="self")
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.warning
    assert at.selectbox(key="cp_metric").value == "self"
    assert "mean over 3 sentences" in figures(at)[0]["layout"]["title"]["text"]
    assert link_of(at)["statistic"] == "self"
