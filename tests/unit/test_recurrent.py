"""The recurrent translators (own-rnn, own-gru, own-bahdanau): reproducible training, forgetting
with length, Bahdanau's attention against its formula, and the lesson 3.6 numbers computed from
them (gradients by autograd against finite differences, timings)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from model.lessons import rnn
from model.own.recurrent import MODELS, RecurrentTranslator, card_path, weights_path
from model.own.train_recurrent import accuracy_by_length, kernels, train_one
from model.own.training_pairs import make_corpus


@pytest.fixture(scope="module")
def models() -> dict[str, RecurrentTranslator]:
    return {name: RecurrentTranslator.from_files(name, device="cpu") for name in MODELS}


@pytest.fixture(scope="module")
def translator():
    from model.own.translator import Translator

    return Translator.from_files(device="cpu")


@pytest.fixture(scope="module")
def held_out(models) -> dict[str, dict]:
    return {name: accuracy_by_length(model, make_corpus(0).test) for name, model in
            models.items()}


def assert_forgets_as_measured(name: str, by_length: list[float]) -> None:
    """Exact match per group of English lengths (1–6, 7–8, 9–11, 12–14, 15+ words) as the lesson
    says it: the one-vector models fall off with length, Bahdanau's does not. Thresholds
    measured on the shipped weights (RNN 100/96/86/24/0 %, GRU 100/100/100/87/62 %, Bahdanau
    100 % in every group) and on a retraining on another processor (RNN 99/96/84/15/0 %, GRU
    100/100/100/81/29 %, Bahdanau 100 %)."""
    first, last = by_length[0], by_length[-1]
    if name == "own-rnn":
        assert first >= 0.95 and last < 0.1 and by_length[-2] < 0.5, by_length
        assert all(a >= b for a, b in zip(by_length, by_length[1:])), by_length  # never better
    elif name == "own-gru":
        assert first == 1.0 and last < 0.75 and last < first - 0.25, by_length
    else:
        assert min(by_length) >= 0.95, by_length


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_retraining_gives_the_shipped_model_again(tmp_path, name):
    card = train_one(name, out_dir=tmp_path, progress=False)
    shipped_card = json.loads(card_path(name).read_text(encoding="utf-8"))
    shipped, again = load_file(str(weights_path(name))), load_file(
        str(weights_path(name, tmp_path)))
    assert shipped.keys() == again.keys()
    if shipped_card["training"].get("kernels") == kernels():
        # the processor and kernels the shipped weights were made on: bit for bit
        for key in shipped:
            assert torch.equal(shipped[key], again[key]), key
        return
    # Another processor (the shipped cards name none: they predate the record). MKL and oneDNN
    # pick their kernels by processor, float sums round differently, and 3,000 Adam steps carry
    # it on: retrained on an AMD EPYC with AVX-512 every tensor differed, by up to 0.26. What
    # comes back is the same model in what the lesson measures of it.
    here = card["held_out"]
    assert here["sentences"] == shipped_card["held_out"]["sentences"] == 500
    assert abs(here["exact_match"] - shipped_card["held_out"]["exact_match"]) <= 0.05
    assert_forgets_as_measured(name, [b["exact_match"] for b in here["by_length"]])


@pytest.mark.slow
def test_training_twice_on_one_machine_gives_the_same_weights_bit_for_bit(tmp_path):
    # one thread, a fixed seed and deterministic algorithms: two runs here are one run
    for name in MODELS:
        cards = [train_one(name, steps=60, out_dir=tmp_path / run, progress=False)
                 for run in ("a", "b")]
        first, second = (load_file(str(weights_path(name, tmp_path / run))) for run in "ab")
        assert first.keys() == second.keys()
        for key in first:
            assert torch.equal(first[key], second[key]), (name, key)
        assert cards[0]["training"]["final_loss"] == cards[1]["training"]["final_loss"]
        assert cards[0]["training"]["kernels"] == kernels()


def test_the_single_vector_models_forget_long_sentences_and_attention_does_not(held_out):
    assert [b["words"] for b in held_out["own-gru"]["by_length"]][0] == [1, 6]
    for name in MODELS:
        assert_forgets_as_measured(name, [b["exact_match"] for b in held_out[name]["by_length"]])


def test_the_seed_sentence_and_its_alignment(models):
    bahdanau = models["own-bahdanau"]
    out = bahdanau.translate("The cat sat on the mat")
    assert " ".join(out.target) == "猫 坐 在 垫子 上"
    assert out.alignment.shape == (5, 6)
    np.testing.assert_allclose(out.alignment.sum(-1), 1, atol=1e-6)
    source = list(out.source)
    # learnt from translating alone: 猫 reads cat, 垫子 reads mat
    assert source[int(out.alignment[0].argmax())] == "cat"
    assert source[int(out.alignment[3].argmax())] == "mat"
    assert models["own-gru"].translate("The cat sat on the mat").alignment is None


def test_additive_attention_equals_its_formula_computed_by_hand(models):
    """e_j = vᵀ tanh(W_s s + W_h h_j + b), α = softmax(e) over unpadded j, c = Σ α_j h_j, in
    numpy float64 from the module's parameters."""
    attention = models["own-bahdanau"].network.attention
    generator = torch.Generator().manual_seed(3)
    state = torch.randn(2, 128, generator=generator)
    annotations = torch.randn(2, 5, 128, generator=generator)
    allowed = torch.tensor([[True] * 5, [True, True, True, False, False]])
    with torch.no_grad():
        context, weights = attention(state, attention.W_h(annotations), annotations, allowed)
    Ws, Wh, b, v = (p.detach().double().numpy() for p in (
        attention.W_s.weight, attention.W_h.weight, attention.W_h.bias, attention.v.weight[0]))
    for row in range(2):
        h = annotations[row].double().numpy()
        e = np.tanh(state[row].double().numpy() @ Ws.T + h @ Wh.T + b) @ v
        e[~allowed[row].numpy()] = -np.inf
        alpha = np.exp(e - e.max())
        alpha /= alpha.sum()
        np.testing.assert_allclose(weights[row].numpy(), alpha, atol=1e-6)
        np.testing.assert_allclose(context[row].numpy(), alpha @ h, atol=1e-5)
    assert (weights[1, 3:] == 0).all()


def test_padding_in_a_batch_changes_nothing(models):
    model = models["own-bahdanau"]
    short, long = "The cat sat on the mat", "The dog chased the cat because it was angry"
    together = model.translate_ids([model.source_ids(short), model.source_ids(long)])
    alone = [model.translate_ids([model.source_ids(t)])[0] for t in (short, long)]
    assert together == alone


def test_the_gradient_equals_finite_differences(models, translator):
    """Autograd's ‖∂h_last/∂x_j‖ against central differences of the real module (float64)."""
    gru = models["own-gru"]
    ids = gru.source_ids("The cat chased the mouse")
    norms = rnn.recurrent_gradient(gru, ids)
    network = gru.network.double()
    try:
        with torch.no_grad():
            x = network.src_embed(torch.tensor([ids]))[0]  # [source, d_embed]
            allowed = torch.ones(1, len(ids), dtype=torch.bool)
            eps, j = 1e-6, 1
            columns = []
            for k in range(x.shape[1]):
                plus, minus = x.clone(), x.clone()
                plus[j, k] += eps
                minus[j, k] -= eps
                columns.append((network.encode_embedded(plus[None], allowed)[1][0]
                                - network.encode_embedded(minus[None], allowed)[1][0])
                               / (2 * eps))
        numeric = torch.stack(columns, 1).norm().item()
    finally:
        network.float()
    assert norms[j] == pytest.approx(numeric, rel=1e-4)


def test_the_gradient_profile_fades_with_distance_in_the_recurrent_encoders(models,
                                                                           translator):
    single = {name: models[name] for name in ("own-rnn", "own-gru")}
    profile = rnn.gradient_profile(single, translator, rnn.long_inputs(8))
    assert profile.texts == 8 and len(profile.distance) >= 25
    # the gradient at the 10 farthest words ÷ at the 5 nearest, measured on the shipped weights
    # over these 8 texts (the page's): RNN ×0.56, GRU ×0.34, the Transformer's encoder ×0.77
    recurrent = [profile.far_over_near(name) for name in ("own-rnn", "own-gru")]
    assert max(recurrent) < 0.7
    assert max(recurrent) < profile.far_over_near("own-translator")
    one = rnn.gradient_by_distance(single, translator, "The cat sat on the mat")
    other = rnn.gradient_by_distance(single, translator, "The dog sat on the mat")
    assert not np.allclose(one.norms["own-gru"], other.norms["own-gru"])
    assert list(one.distance) == [5, 4, 3, 2, 1, 0]


def test_timing_covers_each_length_and_refuses_beyond_its_bound(models, translator):
    timing = rnn.forward_times(models["own-gru"], translator, (4, 64), repeats=2)
    assert timing.lengths == (4, 64) and timing.device == "cpu"
    assert all(t > 0 for t in (*timing.gru, *timing.transformer))
    with pytest.raises(ValueError, match="between 1 and"):
        rnn.forward_times(models["own-gru"], translator, (rnn.MAX_TIMED_LENGTH + 1,))


def test_side_by_side_is_the_models_own_output(models, translator):
    text = "The big dog chased the small cat because it was angry"
    side = rnn.side_by_side({n: models[n] for n in ("own-rnn", "own-gru")},
                            models["own-bahdanau"], translator, text)
    assert side.single_vector["own-gru"] == models["own-gru"].translate(text).target
    assert " ".join(side.transformer) == translator.translate(text)
    trace = translator.trace(text)
    last = trace.layers("decoder.cross") - 1
    np.testing.assert_allclose(side.transformer_alignment,
                               trace.mean_weights("decoder.cross", last)[:len(side.transformer)])
    np.testing.assert_allclose(side.bahdanau_alignment,
                               models["own-bahdanau"].translate(text).alignment)
