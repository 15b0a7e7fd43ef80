"""The Compare page's two sentences under AppTest: example pairs that line up under every bundled
model (checked with the models' own tokenizers), sentences kept over other pages and in the link,
and the notice that a causal model cannot change the rows before the word that changed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from app_pages.frame.navigation import script
from app_pages.views.compare import CAUSAL_PAIR, ENCODER_PAIR, EXAMPLE_PAIRS, unchanged_rows
from model import BUNDLED, Family
from tests.app.test_links import link_of, opened
from tests.helpers import app_test, figures, messages, plotly_array

TYPED = ("the dog saw the cat because it was hungry", "the dog saw the bird because it was hungry")


def shown_title(figure: dict) -> str:
    """A figure's title as it reads, however it was wrapped to the chart's width."""
    return " ".join(re.sub(r"<[^>]+>", " ", figure["layout"]["title"]["text"]).split())


def _pair(at) -> tuple[str, str]:
    return at.text_input(key="cmp_a").value, at.text_input(key="cmp_b").value


@pytest.mark.slow
@pytest.mark.parametrize("spec", BUNDLED)
def test_the_example_pair_lines_up_under_each_bundled_models_own_tokenizer(spec):
    from model import load

    loaded = load(spec, device="cpu")
    first, second = (loaded.trace(text) for text in EXAMPLE_PAIRS[loaded.family])
    assert first.names == second.names
    for name in first.names:  # every kind the page offers, a translation's decoder included
        (qa, ka), (qb, kb) = first.axes(name), second.axes(name)
        assert (len(qa), len(ka)) == (len(qb), len(kb)), (spec, name, list(qa), list(qb))
        differ = [i for i, (a, b) in enumerate(zip(qa, qb)) if a != b]
        assert differ, (spec, name)  # a minimal pair: some token changed
    if loaded.family is Family.DECODER_ONLY:  # the changed word comes before "it"
        tokens = [str(t).strip() for t in first.axes("decoder.self")[0]]
        assert unchanged_rows(first, second, "decoder.self") < tokens.index("it")


def test_the_example_pair_is_chosen_by_the_model_and_ranks_heads():
    at = app_test("compare")
    assert not at.exception
    assert _pair(at) == ENCODER_PAIR
    assert len(figures(at)) == 3 and "do not line up" not in messages(at.info)
    assert "reads left to right" not in messages(at.info)  # an encoder: no causal notice
    link = link_of(at)
    assert (link["a"], link["b"]) == ENCODER_PAIR  # in the link from the first visit on


@pytest.mark.slow
def test_an_untouched_example_follows_the_model_and_a_typed_pair_stays():
    at = app_test("compare", model_choice="smollm2")
    assert not at.exception, at.exception
    assert _pair(at) == CAUSAL_PAIR
    assert len(figures(at)) == 3 and "do not line up" not in messages(at.info)
    at.selectbox(key="model_choice").set_value("minilm").run()
    assert _pair(at) == ENCODER_PAIR  # the example, not typed: it is minilm's now
    at.text_input(key="cmp_b").set_value(TYPED[1]).run()
    at.selectbox(key="model_choice").set_value("smollm2").run()
    assert not at.exception
    assert _pair(at) == (ENCODER_PAIR[0], TYPED[1])  # typed: kept


def test_a_typed_pair_is_kept_over_other_pages_and_in_the_link():
    at = app_test("compare")
    at.text_input(key="cmp_a").set_value(TYPED[0]).run()
    at.text_input(key="cmp_b").set_value(TYPED[1]).run()
    link = link_of(at)
    assert (link["a"], link["b"], link["mode"]) == (*TYPED, "sentences")
    for page in ("explore", "corpus", "lesson_hand"):
        at.switch_page(script(page)).run()
        assert not at.exception, page
        at.switch_page(script("compare")).run()
        assert not at.exception
        assert _pair(at) == TYPED, page
    at.selectbox(key="model_choice").set_value("own-random").run()  # another model: kept
    assert _pair(at) == TYPED
    again = opened("compare", **link)  # a reload, or the link sent to someone
    assert not again.exception
    assert _pair(again) == TYPED
    assert len(figures(again)) == 3


def test_a_pair_that_does_not_line_up_is_still_in_the_link():
    # the page ends early (side by side only): the link is written after it all the same
    at = opened("compare", model="own-translator",
                b="the big dog chased the cat because it was hungry")
    assert not at.exception
    assert "do not line up" in messages(at.info)
    link = link_of(at)
    assert link["a"] == ENCODER_PAIR[0]  # the box the link left out: the example's
    assert link["b"] == "the big dog chased the cat because it was hungry"
    assert link["kind"] == "encoder.self" and link["layer"] == "0"


@pytest.mark.slow
def test_a_causal_model_says_which_rows_cannot_change_and_offers_an_encoder():
    # the classic pair: the word that changes comes after "it"
    at = app_test("compare", model_choice="smollm2", cmp_a=ENCODER_PAIR[0], cmp_b=ENCODER_PAIR[1])
    assert not at.exception, at.exception
    said = messages(at.info)
    assert "smollm2 reads left to right" in said
    assert "the · dog · chased · the · cat · because · it · was" in said
    assert "“hungry” → “scared”" in said and "minilm" in said
    difference = figures(at)[2]
    rows = plotly_array(difference["data"][0]["z"]).reshape(9, 9)
    assert np.nan_to_num(np.abs(rows[:8])).max() < 1e-5  # the "it" row among them: unchanged
    assert np.isnan(rows[0, 1:]).all()  # later keys are masked: grey, not "unchanged"
    assert "grey: masked" in shown_title(difference)
    at.button(key="cmp_encoder").click().run()
    assert not at.exception
    assert at.selectbox(key="model_choice").value == "minilm"
    assert _pair(at) == ENCODER_PAIR  # kept: it came with the page, not as an example
    assert "reads left to right" not in messages(at.info)
    ranked = at.dataframe[0].value
    assert len(ranked) > 0  # under an encoder the later word changes the heads


@pytest.mark.slow
def test_no_notice_when_the_changed_word_is_first_or_the_sentences_are_the_same():
    at = app_test("compare", model_choice="smollm2", cmp_a="cats sleep", cmp_b="dogs sleep")
    assert not at.exception
    assert "reads left to right" not in messages(at.info)
    at.text_input(key="cmp_b").set_value("cats sleep").run()
    assert "reads left to right" not in messages(at.info)


def test_a_link_reopens_the_two_models_and_the_training_stages_as_chosen():
    at = opened("compare", model="own-translator", mode="models", second="own-random",
                kind_a="decoder.cross", layer_a=1, head_a=2, layer_b=4, head_b=3)
    assert not at.exception and not at.warning, messages(at.warning)
    assert at.selectbox(key="cmp_ma_kind").value == "decoder.cross"
    assert (at.selectbox(key="cmp_ma_layer").value, at.selectbox(key="cmp_ma_head").value) == (1, 2)
    assert (at.selectbox(key="cmp_mb_layer").value, at.selectbox(key="cmp_mb_head").value) == (4, 3)
    titles = [shown_title(f) for f in figures(at)]
    assert titles[0].startswith("own-translator · cross-attention · layer 1 · head 2")
    assert titles[1].startswith("own-random · encoder self-attention · layer 4 · head 3")
    link = link_of(at)
    assert (link["kind_a"], link["layer_b"], link["head_b"]) == ("decoder.cross", "4", "3")
    at = opened("compare", mode="stages", stage_layer=0, stage_head=-1)
    assert not at.exception and not at.warning
    assert at.selectbox(key="cmp_stage_layer").value == 0
    assert at.selectbox(key="cmp_stage_head").value == -1  # the mean of the heads
    assert link_of(at)["stage_head"] == "-1"
