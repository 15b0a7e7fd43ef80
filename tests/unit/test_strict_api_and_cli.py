"""The API and the CLI are strict: bad indices, invalid Unicode and unexpected failures are
refused with one clear message, never a wrong-shaped answer or a traceback."""

from __future__ import annotations

import numpy as np
import pytest

import model
from model import AttentionTrace, ModelLoadError
from model.__main__ import main
from model.store import DenseStore, IndexOutOfRange
from model.text import check_text, check_texts
from tests.helpers import SEED_SENTENCE, tiny_own_model

N_LAYERS, N_HEADS = 2, 4  # of the tiny own models


@pytest.fixture(scope="module")
def decoder_trace():
    return tiny_own_model("decoder-only").trace(SEED_SENTENCE)


@pytest.fixture(scope="module")
def enc_dec_model():
    return tiny_own_model("encoder-decoder")


# --- indices ----------------------------------------------------------------------------------

# method -> call(trace, layer, head), for a decoder-only trace
METHODS = {
    "weights": lambda t, layer, head: t.weights("decoder.self", layer, head),
    "layer_weights": lambda t, layer, head: t.layer_weights("decoder.self", layer),
    "mean_weights": lambda t, layer, head: t.mean_weights("decoder.self", layer),
    "head_or_mean": lambda t, layer, head: t.head_or_mean("decoder.self", layer, head),
    "scores": lambda t, layer, head: t.scores("decoder.self", layer, head),
    "masked_scores": lambda t, layer, head: t.masked_scores("decoder.self", layer, head),
    "mask": lambda t, layer, head: t.mask("decoder.self", layer),
    "kv_head": lambda t, layer, head: t.kv_head(head),
}
TAKES = {"weights": ("layer", "head"), "layer_weights": ("layer",), "mean_weights": ("layer",),
         "head_or_mean": ("layer", "head"), "scores": ("layer", "head"),
         "masked_scores": ("layer", "head"), "mask": ("layer",), "kv_head": ("head",)}
NOT_INTEGERS = [True, False, 1.0, "1", None, np.float64(1.0), np.bool_(True), [1]]
OUT_OF_RANGE = [-1, 99, np.int64(-2), np.int32(99)]
VALID = {"layer": f"0..{N_LAYERS - 1}", "head": f"0..{N_HEADS - 1}"}


def _call(method: str, trace, argument: str, value):
    args = {"layer": 0, "head": 0, argument: value}
    return METHODS[method](trace, args["layer"], args["head"])


def _cases(values):
    return [pytest.param(method, argument, value, id=f"{method}-{argument}-{value!r}")
            for method, arguments in TAKES.items() for argument in arguments
            for value in values
            if not (method == "head_or_mean" and argument == "head" and value is None)]


@pytest.mark.parametrize(("method", "argument", "value"), _cases(NOT_INTEGERS))
def test_index_that_is_not_an_integer_is_a_type_error(decoder_trace, method, argument, value):
    with pytest.raises(TypeError, match=f"{argument} must be an integer"):
        _call(method, decoder_trace, argument, value)


@pytest.mark.parametrize(("method", "argument", "value"), _cases(OUT_OF_RANGE))
def test_index_out_of_range_names_the_valid_range(decoder_trace, method, argument, value):
    with pytest.raises(IndexError, match=f"{argument} {int(value)} is out of range "
                                         f"{VALID[argument]}"):
        _call(method, decoder_trace, argument, value)


def test_an_index_out_of_range_is_also_a_value_error(decoder_trace):
    with pytest.raises(ValueError, match=r"layer 99 is out of range 0\.\.1 \(decoder.self has 2"):
        decoder_trace.mask("decoder.self", 99)
    with pytest.raises(ValueError, match=r"head 4 is out of range 0\.\.3"):
        decoder_trace.kv_head(4)


@pytest.mark.parametrize("method", list(METHODS))
def test_numpy_integers_index_like_python_ints(decoder_trace, method):
    expected = _call(method, decoder_trace, "layer", 1)
    for kind in (np.int64, np.int32, np.uint8):
        got = _call(method, decoder_trace, "layer", kind(1))
        np.testing.assert_array_equal(got, expected)
    assert np.shape(decoder_trace.weights("decoder.self", np.int64(1), np.int16(3))) == (6, 6)


def test_head_or_mean_takes_none_for_the_mean_of_the_heads(decoder_trace):
    np.testing.assert_allclose(decoder_trace.head_or_mean("decoder.self", 1, None),
                               decoder_trace.layer_weights("decoder.self", 1).mean(axis=0))


@pytest.mark.parametrize("name", ["encoder.self", "decoder.cross", "", "decoder"])
def test_unknown_kind_name_lists_the_kinds_of_the_trace(decoder_trace, name):
    with pytest.raises(ValueError, match=r"not in this decoder-only trace; choose from "
                                         r"\('decoder.self',\)"):
        decoder_trace.weights(name, 0, 0)


@pytest.mark.parametrize("name", [None, 0, ("decoder.self",)])
def test_kind_name_that_is_not_a_string_is_a_type_error(decoder_trace, name):
    with pytest.raises(TypeError, match="attention kind must be a string"):
        decoder_trace.mask(name)


@pytest.mark.parametrize("index", [(True, 0), (0, True), (0.0, 0), (-1, 0), (0, 4), (2, 0)])
def test_dense_store_checks_its_indices_too(index):
    store = DenseStore(np.full((2, 4, 3, 3), 1 / 3, np.float32),
                       np.zeros((2, 4, 3, 3), np.float32))
    error = TypeError if any(not isinstance(i, int) or isinstance(i, bool) for i in index) \
        else IndexOutOfRange
    for call in (lambda: store[index], lambda: store.scores(*index)):
        with pytest.raises(error):
            call()
    if index[1] == 0:
        with pytest.raises(error, match="layer"):
            store.layer(index[0])
        with pytest.raises(error, match="layer"):
            store.mask(index[0])


def test_special_positions_must_be_integers():
    weights = np.full((1, 1, 2, 2), 0.5, np.float32)
    common = dict(model="m", family="encoder-only", attention={"encoder.self": weights},
                  n_heads=1, n_kv_heads=1, tokens=["a", "b"], ids=[1, 2])
    assert AttentionTrace(**common, special_positions={"tokens": [np.int64(0)]}
                          ).special_positions == {"tokens": (0,)}
    for bad in (True, 0.0, "0"):
        with pytest.raises(TypeError, match="special positions must be integers"):
            AttentionTrace(**common, special_positions={"tokens": [bad]})


def test_unknown_tokens_survive_a_save_and_load(tmp_path):
    weights = np.full((1, 1, 2, 2), 0.5, np.float32)
    trace = AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                           n_heads=1, n_kv_heads=1, tokens=["a", "[UNK]"], ids=[1, 3],
                           unknown={"tokens": {1: "猫"}})
    loaded = AttentionTrace.load(trace.save(tmp_path / "t.npz"))
    assert loaded.unknown == {"tokens": {1: "猫"}}


# --- invalid Unicode --------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["\ud800", "the cat \udfff sat", "a\udcff"])
def test_lone_surrogate_in_the_text_is_refused_with_its_position(text):
    position = next(i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)
    with pytest.raises(ValueError, match=rf"the text holds invalid Unicode \(a lone surrogate "
                                         rf"U\+D[0-9A-F]{{3}} at character {position},"):
        tiny_own_model("decoder-only").trace(text)


def test_lone_surrogate_in_the_target_is_refused(enc_dec_model):
    with pytest.raises(ValueError, match="the target holds invalid Unicode"):
        enc_dec_model.trace(SEED_SENTENCE, target="the \ud83d mat")
    with pytest.raises(ValueError, match="the text holds invalid Unicode"):
        enc_dec_model.trace("\ud83d", target="the mat")


def test_valid_astral_characters_are_not_surrogates():
    assert check_text("emoji 😀 and café") == "emoji 😀 and café"


def test_text_that_is_not_a_string_is_a_type_error(enc_dec_model):
    with pytest.raises(TypeError, match="the text must be a string"):
        enc_dec_model.trace(None)
    with pytest.raises(TypeError, match="the target must be a string"):
        enc_dec_model.trace(SEED_SENTENCE, target=b"mat")


def test_own_single_stack_model_refuses_a_target():
    with pytest.raises(ValueError, match="a target text applies to encoder-decoder models"):
        tiny_own_model("decoder-only").trace(SEED_SENTENCE, target="the mat")


def test_a_batch_is_a_list_of_texts_with_one_target_each():
    with pytest.raises(TypeError, match="texts must be a list of strings, not one str"):
        check_texts("the cat")
    with pytest.raises(ValueError, match="no text"):
        check_texts([])
    with pytest.raises(ValueError, match="1 targets for 2 texts"):
        check_texts(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="text 1 holds invalid Unicode"):
        check_texts(["a", "b\ud800"])
    assert check_texts(("a", "b"), ("c", "d")) == (["a", "b"], ["c", "d"])


# --- the command line -------------------------------------------------------------------------

def _export(tmp_path, *extra: str, spec: str = "own-random") -> list[str]:
    return ["export", "--model", spec, "--text", SEED_SENTENCE, "--out",
            str(tmp_path / "t.npz"), "--device", "cpu", *extra]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


def _fake_load(error: BaseException):
    def load(spec, device="auto", **kwargs):
        raise error
    return load


def test_cli_unexpected_error_exits_1_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(model, "load", _fake_load(RuntimeError("boom\n  in layer 3")))
    assert main(_export(tmp_path)) == 1
    line = _one_error_line(capsys)
    assert line.startswith("error: unexpected RuntimeError: boom in layer 3")
    assert "--debug" in line


def test_cli_debug_shows_the_traceback_of_an_unexpected_error(tmp_path, monkeypatch):
    monkeypatch.setattr(model, "load", _fake_load(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        main(_export(tmp_path, "--debug"))


def test_cli_interrupted_exits_130_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(model, "load", _fake_load(KeyboardInterrupt()))
    assert main(_export(tmp_path)) == 130
    assert _one_error_line(capsys) == "error: interrupted"


def test_cli_model_load_error_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(model, "load", _fake_load(ModelLoadError("could not load 'x': gone")))
    assert main(_export(tmp_path)) == 2
    assert _one_error_line(capsys) == "error: could not load 'x': gone"


def test_cli_bad_spec_exits_2_with_one_line(tmp_path, capsys):
    assert main(_export(tmp_path, spec=str(tmp_path / "no" / "checkpoint"))) == 2
    _one_error_line(capsys)
    assert main(_export(tmp_path, spec="   ")) == 2
    assert "--model is empty" in _one_error_line(capsys)


def test_cli_usage_error_exits_2_with_one_line(tmp_path, capsys):
    assert main(["export", "--model", "own-random"]) == 2
    assert "required" in _one_error_line(capsys)
    assert main(_export(tmp_path, "--device", "gpu")) == 2
    assert "gpu" in _one_error_line(capsys)


def test_cli_refuses_invalid_unicode_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(model, "load", lambda spec, device="auto", **kw: tiny_own_model())
    assert main(["export", "--model", "x", "--text", "cat \udcff", "--out",
                 str(tmp_path / "t.npz")]) == 2
    assert "invalid Unicode" in _one_error_line(capsys)
    assert not (tmp_path / "t.npz").exists()


def test_cli_strips_the_spec_and_exports_a_decoder_only_model(tmp_path, capsys, monkeypatch):
    asked = []

    def load(spec, device="auto", **kwargs):
        asked.append(spec)
        return tiny_own_model("decoder-only")

    monkeypatch.setattr(model, "load", load)
    assert main(_export(tmp_path, spec="  minilm \t")) == 0
    assert asked == ["minilm"]
    assert "wrote" in capsys.readouterr().out
    with np.load(tmp_path / "t.npz") as data:
        assert set(data.files) == {"tokens", "ids", "decoder.self", "meta"}
        assert data["decoder.self"].shape == (N_LAYERS, N_HEADS, 6, 6)
        assert list(data["tokens"]) == SEED_SENTENCE.split()


def test_cli_traces_a_spec_with_surrounding_spaces(tmp_path, capsys):
    assert main(_export(tmp_path, spec=" own-random ")) == 0, capsys.readouterr().err
    assert AttentionTrace.load(tmp_path / "t.npz").model == "own-random"


# --- tiny Hugging Face checkpoints (slow: built once per session) -----------------------------

@pytest.mark.slow
def test_hf_models_refuse_lone_surrogates_before_the_tokenizer(tiny_checkpoints):
    from model.hf.adapter import HFModel

    gpt2 = HFModel.load(str(tiny_checkpoints["gpt2"]), device="cpu")
    with pytest.raises(ValueError, match=r"the text holds invalid Unicode \(a lone surrogate "
                                         r"U\+D800 at character 4"):
        gpt2.trace("the \ud800 cat")
    with pytest.raises(TypeError, match="not one str"):
        gpt2.trace_batch("the cat")
    with pytest.raises(ValueError, match="text 1 holds invalid Unicode"):
        gpt2.trace_batch(["the cat", "\udfff"])
    bart = HFModel.load(str(tiny_checkpoints["bart"]), device="cpu")
    with pytest.raises(ValueError, match="the target holds invalid Unicode"):
        bart.trace(SEED_SENTENCE, target="\ud800")
    assert bart.trace(SEED_SENTENCE, target="The cat").names == (
        "encoder.self", "decoder.self", "decoder.cross")


@pytest.mark.slow
def test_cli_exports_a_tiny_hf_decoder_only_checkpoint(tiny_checkpoints, tmp_path, capsys):
    spec = f" {tiny_checkpoints['llama']} "
    assert main(_export(tmp_path, spec=spec)) == 0, capsys.readouterr().err
    with np.load(tmp_path / "t.npz") as data:
        assert data["decoder.self"].dtype == np.float32
        assert data["decoder.self"].shape[:2] == (2, 4)  # GQA heads expanded to query heads
        assert len(data["tokens"]) == len(data["ids"]) == data["decoder.self"].shape[2]
