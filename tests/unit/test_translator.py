"""own-translator: held-out accuracy, the seed's sentences, alignment, causal traces, export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from model import UnknownWordsError, load
from model.own.hooks import capture
from model.own.train import evaluate
from model.own.training_pairs import make_corpus
from model.own.translator import CARD


@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


@pytest.mark.slow  # translates 500 sentences
def test_held_out_exact_match_is_at_least_95_percent(translator):
    card = json.loads(CARD.read_text(encoding="utf-8"))
    corpus = make_corpus(card["corpus"]["seed"])
    assert len(corpus.train) == card["corpus"]["n_train"]
    score = evaluate(translator, corpus.test)
    assert score["sentences"] == 500
    assert score["exact_match"] >= 0.95
    assert score["exact_match"] == pytest.approx(card["held_out"]["exact_match"])


@pytest.mark.parametrize("en, zh", [
    ("The cat sat on the mat", "猫 坐 在 垫子 上"),
    ("The cat chased the mouse because it was hungry", "猫 追 老鼠 ， 因为 它 饿 了"),
])
def test_seed_sentences_translate_exactly(translator, en, zh):
    assert translator.translate(en) == zh


def test_last_layer_cross_attention_aligns_mat_and_cat(translator):
    trace = translator.trace("The cat sat on the mat")
    written = [step.token for step in trace.steps]
    assert written == ["猫", "坐", "在", "垫子", "上", "<eos>"]
    alignment = trace.mean_weights("decoder.cross", trace.layers("decoder.cross") - 1)
    source = list(trace.source_tokens)
    # row t is the step that wrote word t + 1
    assert source[alignment[written.index("垫子")].argmax()] == "mat"
    assert source[alignment[written.index("猫")].argmax()] == "cat"


def test_trace_holds_every_step_with_causal_and_normalised_patterns(translator):
    trace = translator.trace("The cat chased the mouse because it was hungry")
    assert " ".join(trace.target_tokens) == "<bos> 猫 追 老鼠 ， 因为 它 饿 了"
    assert len(trace.steps) == len(trace.target_tokens)
    for name in trace.names:
        np.testing.assert_allclose(trace.stack(name).sum(-1), 1.0, atol=1e-5)
    causal = trace.stack("decoder.self")
    assert (causal[..., ~trace.mask("decoder.self")] == 0).all()
    for step in trace.steps:
        probs = [p for _, p in step.top_k]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
        assert step.top_k[0][0] == step.token  # greedy: the most probable word


def test_final_pass_rows_equal_step_by_step_decoding(translator):
    trace = translator.trace("The cat sat on the mat")
    net = translator.network
    src = torch.tensor([list(trace.source_ids)])
    target_ids = list(trace.target_ids)
    for t in range(1, len(target_ids) + 1):
        prefix = torch.tensor([target_ids[:t]])
        with torch.inference_mode(), capture(net, lambda n: n.endswith("hook_pattern")) as store:
            net(src_ids=src, tgt_ids=prefix)
        for layer in range(3):
            step_cross = store[f"decoder.layers.{layer}.cross_attn.hook_pattern"][0, :, -1]
            np.testing.assert_allclose(trace.stack("decoder.cross")[layer, :, t - 1],
                                       step_cross.numpy(), atol=1e-5)
            step_self = store[f"decoder.layers.{layer}.self_attn.hook_pattern"][0, :, -1]
            np.testing.assert_allclose(trace.stack("decoder.self")[layer, :, t - 1, :t],
                                       step_self.numpy(), atol=1e-5)


def test_unknown_words_are_all_reported(translator):
    with pytest.raises(UnknownWordsError) as error:
        translator.trace("The zebra sat on the spaceship")
    assert error.value.words == ["zebra", "spaceship"]


def test_teacher_forced_target_is_traced(translator):
    trace = translator.trace("The cat sat on the mat", target="猫 坐 在 地毯 上")
    assert list(trace.target_tokens) == ["<bos>", "猫", "坐", "在", "地毯", "上"]
    step = trace.steps[3]
    assert step.token == "地毯" and step.probability < 0.5


def test_export_of_own_translator_has_consistent_shapes(tmp_path, translator):
    path = translator.trace("The cat sat on the mat").save(tmp_path / "t.npz")
    with np.load(path) as data:
        S, T = len(data["source_tokens"]), len(data["target_tokens"])
        assert (S, T) == (6, 6)
        assert data["encoder.self"].shape == (3, 4, S, S)
        assert data["decoder.self"].shape == (3, 4, T, T)
        assert data["decoder.cross"].shape == (3, 4, T, S)
        meta = json.loads(str(data["meta"]))
        assert meta["model"] == "own-translator" and len(meta["steps"]) == T


def test_the_recorded_training_stages_learn_the_alignment():
    """Compare's training stages: at step 0 the cross-attention is spread evenly over the
    source; the run's trained model aligns each Chinese word with the English word it
    translates."""
    from model.own.translator import Translator, training_stages

    stages = training_stages()
    assert stages[0] == 0 and len(stages) >= 3
    entropies, aligned = [], []
    for step in (stages[0], stages[-1]):
        model = Translator.from_files(device="cpu", stage=step)
        assert model.name == f"own-translator@step{step}"
        trace = model.trace("the cat sat on the mat", target="猫 坐 在 垫子 上")
        w = trace.mean_weights("decoder.cross", trace.layers("decoder.cross") - 1)
        entropies.append(float(-(w * np.log(np.clip(w, 1e-12, 1))).sum(-1).mean()))
        aligned.append([trace.source_tokens[k] for k in w.argmax(-1)])
    assert entropies[0] > 0.9 * np.log(6) > entropies[1] * 4  # even at first, then sharp
    # rows read <bos> 猫 坐 在 and write 猫 坐 在 垫子: cat, sat, on, mat
    assert aligned[1][:4] == ["cat", "sat", "on", "mat"]
