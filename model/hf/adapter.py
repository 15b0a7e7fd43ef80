"""Hugging Face checkpoints as a :class:`~model.interface.LoadedModel`.

:meth:`HFModel.load` resolves a SPEC (:mod:`.checkpoints`), reads the family, sizes and positions
from the config (:mod:`.config`), loads tokenizer and model with transformers' Auto classes (never
``trust_remote_code`` unless asked), in eval mode, on CUDA when present, with attention routed
through :mod:`.capture` so that tracing costs about one fused forward pass. It loads in the
precision asked for (:func:`~model.device.resolve_dtype`), on one device or, where torch sees
several GPUs, spread over them by accelerate (each layer's heads then computed on that layer's
GPU), after checking that its weights fit in the memory available.
"""

from __future__ import annotations

import contextlib
import gc
import pickle
import re
import struct
import threading
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoTokenizer

from i18n import _
from model.budget import Lengths, dense_bytes, lazy_bytes
from model.device import available_memory, dtype_name, resolve_device, resolve_dtype
from model.errors import CaptureError, ModelLoadError
from model.hf import moves
from model.hf.capture import ATTN_EAGER, ATTN_SDPA, LazyAttention, padded_weights, recording
from model.hf.checkpoints import cache_dir, describe, from_pretrained, resolve
from model.hf.config import auto_class, detect_family, first_set, read_dims, read_positions
from model.hf.eager import eager_weights
from model.hf.labels import display_tokens
from model.interface import Generation, Intervenes
from model.meta import TOP_K, Family, ModelDims, PositionInfo, Step, model_facts
from model.policy import OPEN, LoadPolicy
from model.reading.batch import AttentionBatch
from model.store import DenseStore, readonly
from model.text import check_texts
from model.trace import AttentionTrace

MAX_NEW_TOKENS = 64
_STEPS = "_steps"  # the decoder inputs' entry for a generation's steps (not a model input)
# How a model's weights are captured (a trace's ``meta["capture"]``): queries and keys recorded
# through transformers' attention interface and heads recomputed when asked, or every weight
# returned by the model's own eager pass (``output_attentions``).
RECORDED = "recorded"
EAGER = "eager"
# The short input every model is tried on when it loads, to choose and check its route.
PROBE_TEXT = "The cat sat on the mat."
PROBE_TARGET = "the cat"
# How far the recorded weights of the probe may be from the model's eager ones: fused and eager
# attention differ by float rounding (about 1e-6 per layer), a formula that is not the model's by
# 0.01 and more. In half precision the model's eager weights are rounded to it (its scores too,
# in bfloat16) where the recorded ones are computed in float32, and a recorded and an eager pass
# drift apart layer by layer (each rounds its attention's output differently): the probe allows
# that drift between two passes (PROBE_ATOL_BY_DTYPE; SmolLM2-135M's 30 layers differ by up to
# 0.046 in bfloat16, 0.0038 in float16), and checks the formula on one eager pass, recorded as
# it runs, more closely (SAME_PASS_ATOL; SmolLM2-135M: up to 0.012 in bfloat16, 0.0016 in
# float16). See tests/unit/test_precision.py.
PROBE_ATOL = 1e-3
PROBE_ATOL_BY_DTYPE = {"float32": PROBE_ATOL, "float16": 2e-2, "bfloat16": 0.15}
SAME_PASS_ATOL = {"float32": PROBE_ATOL, "float16": 6e-3, "bfloat16": 4e-2}
# What a model spread over several GPUs leaves free on each for its passes: this share of the
# GPU's free memory, and at least this many bytes.
GPU_MARGIN_SHARE = 0.1
GPU_MARGIN_BYTES = 1 << 30
# What reading a broken or foreign checkpoint raises, from transformers, safetensors, the GGUF
# reader and torch's unpickler: all become a ModelLoadError.
LOAD_ERRORS = (OSError, ValueError, KeyError, ImportError, RuntimeError, StopIteration,
               EOFError, struct.error, pickle.UnpicklingError, TypeError, AttributeError,
               IndexError, SafetensorError)
# Parts of a parameter's name that say what it belongs to (BERT, GPT-2, Llama, T5, BART, ...).
_ATTENTION = {"self_attn", "cross_attn", "attn", "attention", "self", "selfattention",
              "encdecattention", "encoder_attn", "crossattention"}
_FFN = ("mlp", "ffn", "intermediate", "densereludense", "fc1", "fc2", "feed_forward")
_EMBEDDINGS = ("embed", "wte", "wpe", "shared")


def parameter_kind(name: str) -> str:
    """``attention``, ``ffn``, ``embeddings`` or ``other`` for a module or parameter name."""
    parts = name.lower().split(".")
    if any(p in _ATTENTION or p.endswith("attention") for p in parts):
        return "attention"
    if any(p.startswith(_FFN) for p in parts) or ("output" in parts and "dense" in parts):
        return "ffn"
    if any(p.startswith(_EMBEDDINGS) or p.endswith(_EMBEDDINGS) for p in parts):
        return "embeddings"
    return "other"


ANSI = re.compile(r"\x1b\[[0-9;]*m")  # terminal colours in transformers' messages


def _load_message(spec: str, source: str, error: BaseException, policy: LoadPolicy) -> str:
    """One line on why ``spec`` did not load: the error's first line, with the places it was
    read from (a converted GGUF in the cache, the home folder) named by the spec instead."""
    text = ANSI.sub("", (str(error).strip().splitlines() or [""])[0])
    if "ignore_mismatched_sizes" in text:
        return _("could not load {spec}: its weights do not have the sizes its config.json "
                 "states").format(spec=repr(spec))
    if isinstance(error, pickle.UnpicklingError):
        return _("could not load {spec}: its pickled weights hold more than tensors, and the "
                 "safe unpickler refused them (convert the checkpoint to safetensors)").format(
                     spec=repr(spec))
    for place, name in ((source, spec), (str(cache_dir()), "the cache"),
                        (str(Path.home()), "~")):
        if place and place != name:
            text = text.replace(place, name)
    if len(text) > 240:
        text = text[:240] + "…"
    if not policy.pickle and "safetensors" in text.lower():
        return _("could not load {spec}: it holds no safetensors weights, and this server "
                 "does not read pickled weights (pytorch_model.bin)").format(spec=repr(spec))
    kind = type(error).__name__
    if isinstance(error, (OSError, ValueError)):
        return _("could not load {spec}: {reason}").format(spec=repr(spec), reason=text or kind)
    return _("could not load {spec}: {reason} ({kind})").format(spec=repr(spec),
                                                                reason=text or kind, kind=kind)


class HFModel(Intervenes):
    """A Hugging Face model ready to trace text (a ``LoadedModel``, like the own models).

    Args:
        name: the SPEC it was loaded as.
        model: the transformers model, in eval mode on ``device``.
        tokenizer: its tokenizer.
        family: its family (from the config).
        device: where it runs.
        dims: its sizes, when already read from the config (else read here).
        route: how its weights are captured, :data:`RECORDED` (the default) or :data:`EAGER`.

    Attributes:
        route: as given or as :meth:`load` chose it after trying the model.
        route_reason: why the model was not recorded through the attention interface ("" when
            it is).
    """

    _moves = moves  # What moves through model.hf.moves: the recording attention function's probe

    def __init__(self, name: str, model, tokenizer, family: Family, device: torch.device,
                 dims: ModelDims | None = None, route: str | None = None):
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.family = Family(family)
        self.device = device
        self.config = model.config
        self.dims: ModelDims = dims or read_dims(self.config, self.family)
        self.positions: PositionInfo = read_positions(self.config)
        self.route = route or RECORDED
        self.route_reason = ""
        self.forced_bos: int | None = None  # the first token generate must write (NLLB, M2M100)
        # a translation tokenizer switches its special tokens to the target language while it
        # reads a target (NLLB, M2M100, Marian): one call at a time for a model many share
        self._tokenizing = threading.Lock()
        self._passing = threading.Lock()  # BigBird's passes, one at a time (its mutable mode)
        self._attention_type = getattr(self.config, "attention_type", None)  # as configured
        self._probed = None  # (probe inputs, the model's eager weights of them) during a load
        # a hybrid model's attention layers (the others state-space or linear), or a looped
        # model's layers as they run: kind -> the model's number of each layer a trace holds,
        # in order; None: every layer once, in order
        self.attention_layers: dict[str, list[int]] | None = None

    @contextlib.contextmanager
    def _configured_attention(self, n_tokens: int):
        """BigBird as a freshly loaded checkpoint runs a pass of ``n_tokens``: block-sparse
        attention, turned into full attention for an input of at most ``(5 + 2 · random
        blocks) · block size`` tokens. BigBird makes that switch itself inside a pass, on the
        model for good, and that pass returns no weights; here it is made before each pass, one
        pass at a time."""
        if self._attention_type != "block_sparse":
            yield
            return
        most = (5 + 2 * self.config.num_random_blocks) * self.config.block_size
        with self._passing:
            target = self.model if hasattr(self.model, "set_attention_type") else \
                self.model.get_encoder()
            target.set_attention_type("original_full" if n_tokens <= most else "block_sparse")
            yield

    def _tokenize(self, *args, **kwargs):
        with self._tokenizing:
            return self.tokenizer(*args, **kwargs)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every attention kind of its family."""
        return self.family.kinds

    @property
    def module(self) -> torch.nn.Module:
        return self.model

    @property
    def dtype(self) -> str:
        """The precision of its weights: ``"float32"``, ``"bfloat16"`` or ``"float16"``."""
        return dtype_name(self.model.dtype)

    @property
    def spread(self) -> bool:
        """Whether its layers are placed by accelerate (a device map: several GPUs, or layers
        offloaded to the CPU or disk), each layer's heads computed where that layer ran."""
        return bool(getattr(self.model, "hf_device_map", None))

    def _devices(self) -> str:
        """Where it runs, for a trace: its device, or a spread model's places joined by ``+``
        (``cuda:0+cuda:1``, ``cpu+disk``)."""
        if not self.spread:
            return str(self.device)
        places = []
        for place in self.model.hf_device_map.values():
            name = f"cuda:{place}" if isinstance(place, int) else str(place)
            if name not in places:
                places.append(name)
        return "+".join(places)

    def parameter_modules(self) -> dict[str, list[torch.nn.Module]]:
        """Modules holding parameters, grouped by what their names say they are."""
        groups: dict[str, list[torch.nn.Module]] = {"attention": [], "ffn": [], "embeddings": []}
        for name, module in self.model.named_modules():
            if next(module.parameters(recurse=False), None) is None:
                continue
            kind = parameter_kind(name)
            if kind in groups:
                groups[kind].append(module)
        return groups

    def position_embeddings(self, n_positions: int) -> tuple[str, np.ndarray] | None:
        """``(parameter name, first n vectors [position, d_model])`` of learned absolute
        positions (BERT's ``position_embeddings``, GPT-2's ``wpe``), else None."""
        for name, parameter in self.model.named_parameters():
            lowered = name.lower()
            if parameter.ndim == 2 and ("position" in lowered or "wpe" in lowered) and \
                    ("embed" in lowered or "wpe" in lowered):
                return name, parameter.detach()[:n_positions].float().cpu().numpy()
        return None

    def position_table(self, n_positions: int) -> None:
        """None: a checkpoint's fixed tables (Marian, M2M100) are its own, not the seed's."""
        return None

    @classmethod
    def load(cls, spec: str, device: str = "auto", trust_remote_code: bool = False,
             policy: LoadPolicy = OPEN, dtype: str = "auto", device_map=None,
             max_memory: dict | None = None, offload_folder: str | None = None) -> HFModel:
        """Load ``spec`` (see :func:`~model.hf.checkpoints.resolve`) on ``device``, in eval
        mode, in precision ``dtype`` (:func:`~model.device.resolve_dtype`), from where
        ``policy`` allows.

        ``device="auto"`` where torch sees several CUDA GPUs spreads the model over them
        (accelerate's ``device_map="auto"``, each GPU keeping a margin free for the passes);
        each layer's heads are then computed on that layer's GPU. Before any weight is read,
        the weights' size (counted from the checkpoint's safetensors headers, else from its
        config without allocating) is checked against the memory available.

        Args:
            device_map, max_memory, offload_folder: an explicit placement, passed to
                transformers' ``from_pretrained`` as they are (accelerate's device maps, e.g.
                some layers on ``"cpu"`` and the rest offloaded to ``"disk"`` in
                ``offload_folder``); the memory check is then left to that placement.

        Raises:
            ModelLoadError: for every reason a checkpoint cannot be loaded (a missing or
                refused place, a truncated or foreign file, a config without attention, weights
                that do not fit the config, pickled weights where they are refused, ...), with
                a one-line message that names the spec, never the server's own folders.
        """
        device_t = resolve_device(device)
        dtype_t = resolve_dtype(dtype, device_t)
        common = dict(trust_remote_code=trust_remote_code)
        weights = {} if policy.pickle else {"use_safetensors": True}
        placement = _placement(device, device_t, device_map, max_memory, offload_folder)
        source = spec
        try:
            source, local_only = resolve(spec, trust_remote_code, policy, dtype=dtype_t)
            config = from_pretrained(AutoConfig, source, local_only, policy, **common)
            family = detect_family(config)
            dims = read_dims(config, family)  # refuse a config without attention before weights
            if device_map is None:
                _check_fits(spec, source, local_only, config, family, dtype_t, device_t,
                            placement, trust_remote_code)
            tokenizer = from_pretrained(AutoTokenizer, source, local_only, policy, **common)
            model = from_pretrained(auto_class(family), source, local_only, policy,
                                    dtype=dtype_t, **placement, **common, **weights)
        except ModelLoadError:
            raise
        except LOAD_ERRORS as error:
            raise ModelLoadError(_load_message(spec, source, error, policy)) from None
        model = _ready(model, device_t)
        device_t = _input_device(model, device_t)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        loaded = cls(spec, model, tokenizer, family, device_t, dims)
        del model  # held by ``loaded`` alone, so that a reload in eager mode frees it
        if family is Family.ENCODER_DECODER:
            loaded.forced_bos = choose_target_language(tokenizer)

        def reload_eager():
            again = from_pretrained(auto_class(family), source, local_only, policy,
                                    dtype=dtype_t, attn_implementation="eager", **placement,
                                    **common, **weights)
            return _ready(again, device_t)

        try:
            loaded._choose_route(reload_eager)
        except ModelLoadError:
            raise
        except LOAD_ERRORS as error:
            raise ModelLoadError(_load_message(spec, source, error, policy)) from None
        return loaded

    # --- the route: recorded through the attention interface, or the model's eager weights ---

    def _layers(self) -> dict[str, int]:
        """How many layers each kind of a trace has, from the config."""
        if self.attention_layers is not None:
            return {kind: len(numbers) for kind, numbers in self.attention_layers.items()}
        if self.family is Family.ENCODER_DECODER:
            return {"encoder.self": self.dims.n_encoder_layers,
                    "decoder.self": self.dims.n_decoder_layers,
                    "decoder.cross": self.dims.n_decoder_layers}
        kind = self.family.kinds[0]
        return {kind: self.dims.n_encoder_layers or self.dims.n_decoder_layers}

    def _set_route(self, route: str, reload_eager=None) -> None:
        """Switch the model to ``route``'s attention implementation (our recording one, or
        transformers' eager one, reloading the model with it where it cannot be switched)."""
        self.route = route
        if route == RECORDED:
            with _quiet_transformers():
                self.model.set_attn_implementation(
                    ATTN_SDPA if self.model._supports_sdpa else ATTN_EAGER)
            return
        with _quiet_transformers():
            try:
                self.model.set_attn_implementation("eager")
            except (ValueError, AttributeError, NotImplementedError):
                pass
        if self.model.config._attn_implementation != "eager" and reload_eager is not None:
            # a model that chooses its implementation when built: loaded again, the first
            # copy let go before (never two in memory)
            self.model = None
            gc.collect()
            self.model = reload_eager()
            self.config = self.model.config

    def _choose_route(self, reload_eager=None) -> None:
        """Try the model on :data:`PROBE_TEXT`: keep the recorded route when every layer's call
        was seen with one key per token, else take the eager weights; refuse the model when
        neither gives one token-to-token map per layer.

        Args:
            reload_eager: loads the model again in eager mode, for models whose attention
                implementation cannot be switched once built (falcon).

        Raises:
            ModelLoadError: its attention cannot be captured exactly, with the reason.
        """
        try:
            inputs = self.prepare_inputs(
                [PROBE_TEXT], [PROBE_TARGET] if self.family is Family.ENCODER_DECODER else None)
        except LOAD_ERRORS as error:
            raise ModelLoadError(_("could not load {spec}: it cannot read a short English "
                                   "sentence ({error})").format(
                spec=repr(self.name), error=describe(error))) from None
        calls = []
        if self.route == RECORDED:
            self._set_route(RECORDED)
            try:
                calls = self._record(inputs)
                problem = self._recorded_problem(calls, inputs)
            except LOAD_ERRORS as error:
                problem = describe(error)
            if problem is None or self._some_layers_recorded(calls, inputs):
                problem = self._against_eager(calls, inputs)
                self._probed = None  # the probe's eager weights are not kept past the load
                if problem is None:
                    return
                self.attention_layers = None
            self.route_reason = problem
        self._set_route(EAGER, reload_eager)
        try:
            with self._configured_attention(inputs["input_ids"].shape[1]):
                weights = eager_weights(self.model, self.family, inputs, self._layers(),
                                        some=self.family.single_stack)
            self._some_layers_eager(weights)
            self._check_eager(weights)
        except ModelLoadError as error:
            reasons = [r for r in (self.route_reason, str(error)) if r]
            raise ModelLoadError(_("cannot show the attention of {spec} exactly: {reason}").format(
                spec=repr(self.name), reason="; ".join(reasons))) from None
        except LOAD_ERRORS as error:
            raise ModelLoadError(_("cannot show the attention of {spec} exactly: {reason}; its "
                                   "eager pass failed ({error})").format(
                spec=repr(self.name), reason=self.route_reason,
                error=describe(error))) from None

    def _eager_probe(self, inputs) -> dict[str, np.ndarray] | None:
        """The model's own eager weights of the probe ``inputs`` (run once per load, kept for
        the checks that compare with them), or None where it cannot run in eager mode; the
        model is left on the recorded route."""
        if self._probed is None or self._probed[0] is not inputs:
            self._set_route(EAGER)
            try:
                maps = None if self.model.config._attn_implementation != "eager" else \
                    eager_weights(self.model, self.family, inputs, None, some=True)
            except (ModelLoadError, *LOAD_ERRORS):
                maps = None
            finally:
                self._set_route(RECORDED)
            self._probed = (inputs, maps)
        return self._probed[1]

    def _against_eager(self, calls, inputs) -> str | None:
        """Why the weights recomputed from the probe's recorded ``calls`` are not the model's
        own eager ``output_attentions`` on it (to :data:`PROBE_ATOL`; rows compared as shares
        where a sink takes part, since some models return their eager weights before it), or
        None. A model that cannot switch to eager mode is not compared.

        In half precision two passes drift apart layer by layer (each rounds its attention's
        output differently), so the two are compared to :data:`PROBE_ATOL_BY_DTYPE`, and the
        formula is checked more closely on one pass (:meth:`_against_eager_same_pass`)."""
        trace = self._make_trace(calls, inputs, 0)
        maps = self._eager_probe(inputs)
        if maps is None:  # no eager pass to compare with: the recorded route is all there is
            return None
        problem = self._differs(trace, maps, calls, PROBE_ATOL_BY_DTYPE.get(self.dtype,
                                                                            PROBE_ATOL))
        if problem is None and self.dtype != "float32":
            problem = self._against_eager_same_pass(inputs)
        return problem

    def _against_eager_same_pass(self, inputs) -> str | None:
        """Half precision: why the weights recomputed from the queries and keys recorded in the
        model's own eager pass are not that pass's ``output_attentions`` (to
        :data:`SAME_PASS_ATOL`: the eager weights and, in bfloat16, scores are rounded to the
        model's precision, the recorded ones computed in float32), or None; not compared where
        the eager implementation cannot be recorded."""
        with _quiet_transformers():
            try:
                self.model.set_attn_implementation(ATTN_EAGER)
            except (ValueError, AttributeError, NotImplementedError):
                return None
        try:
            with recording(self.model) as recorder:
                maps = eager_weights(self.model, self.family, inputs, None, some=True)
        except (ModelLoadError, *LOAD_ERRORS):
            return None
        finally:
            self._set_route(RECORDED)
        calls = recorder.calls
        if self._recorded_problem(calls, inputs) is not None:
            return None
        trace = self._make_trace(calls, inputs, 0)
        return self._differs(trace, maps, calls, SAME_PASS_ATOL.get(self.dtype, PROBE_ATOL))

    def _differs(self, trace, maps, calls, tolerance: float) -> str | None:
        """Why ``trace``'s weights are not the eager ``maps`` to ``tolerance``, or None."""
        per_kind = self._per_kind(calls)
        for kind, eager in maps.items():
            got = trace.stack(kind)  # [layer, head, query, key]
            expected = eager[:, 0]
            if self.config.model_type in KEYS_AFTER_TOKENS:
                expected = expected[..., :got.shape[-1]]  # the tokens' columns
            if got.shape != expected.shape:
                return _("its recorded {kind} weights have shape {got}, its eager ones "
                         "{expected}").format(kind=kind, got=got.shape, expected=expected.shape)
            if any(call.sinks is not None for call in per_kind[kind]):
                got = got / np.maximum(got.sum(-1, keepdims=True), 1e-30)
                expected = expected / np.maximum(expected.sum(-1, keepdims=True), 1e-30)
            worst = float(np.abs(got - expected).max(initial=0.0))
            if not worst <= tolerance:
                return _("its recorded {kind} weights differ from its eager output_attentions "
                         "by up to {worst:.2g}").format(kind=kind, worst=worst)
        return None

    def _some_layers_recorded(self, calls, inputs) -> bool:
        """Whether a model whose attention calls are not one per layer records each of them
        exactly: a hybrid model (some layers attention, the others state-space or linear
        recurrences) or a looped one (Dory: its layers run several times). It does when every
        call names its layer and the model's own eager pass returns as many maps; then the
        trace holds one layer per call (:attr:`attention_layers` says which model layer each
        is) and True is returned."""
        kind = self.family.kinds[0]
        numbers = [layer_number(call.module_name) for call in calls]
        if not self.family.single_stack or not calls or None in numbers or \
                len(calls) == self._layers()[kind]:
            return False
        found = self._eager_probe(inputs)
        if found is None or kind not in found:
            return False
        maps = found[kind]
        self.attention_layers = {kind: numbers}
        if len(maps) == len(calls) and self._recorded_problem(calls, inputs) is None:
            return True
        self.attention_layers = None
        return False

    def _some_layers_eager(self, weights: dict[str, np.ndarray]) -> None:
        """On the eager route, a hybrid model whose eager pass returned maps for fewer layers
        than it has: the layers its config names as attention, when they are as many.

        Raises:
            ModelLoadError: which layers the maps belong to is not known.
        """
        kind = self.family.kinds[0]
        if kind not in weights or len(weights[kind]) == self._layers()[kind]:
            return
        numbers = config_attention_layers(self.config)
        if numbers is None or len(numbers) != len(weights[kind]):
            raise ModelLoadError(_("its {kind} attention returns {got} maps for {layers} layers, "
                                   "and its config does not say which layers they are").format(
                kind=kind, got=len(weights[kind]), layers=self._layers()[kind]))
        self.attention_layers = {kind: numbers}

    def _recorded_problem(self, calls, inputs) -> str | None:
        """Why the recorded ``calls`` of ``inputs`` are not one exact map per layer, or None."""
        per_kind: dict[str, list] = {}
        for call in calls:
            per_kind.setdefault(self._classify(call.module_name), []).append(call)
        n_source = inputs["input_ids"].shape[1]
        n_target = inputs["decoder_input_ids"].shape[1] if "decoder_input_ids" in inputs \
            else n_source
        for kind, layers in self._layers().items():
            got = per_kind.get(kind, [])
            if len(got) < layers:
                return _("{got} of its {layers} {kind} layers call the attention interface (the "
                         "others are not attention, or compute it themselves)").format(
                    got=len(got), layers=layers, kind=kind)
            if len(got) > layers:
                return _("its {kind} attention is called {got} times for {layers} layers (layers "
                         "that run more than once)").format(got=len(got), layers=layers,
                                                            kind=kind)
            queries = n_source if kind == "encoder.self" else n_target
            keys = n_target if kind == "decoder.self" else n_source
            for call in got:
                extra = call.k.shape[2] > keys and kind != "decoder.cross" and \
                    self.config.model_type in KEYS_AFTER_TOKENS
                if call.q.shape[2] != queries or call.k.shape[2] != keys and not extra:
                    return _("its {kind} attention sees {keys} keys for {tokens} tokens: keys "
                             "that are not tokens (compressed keys, memory)").format(
                        kind=kind, keys=call.k.shape[2], tokens=keys)
            heads = {call.q.shape[1] for call in got}
            if len(heads) > 1:
                return _("its {kind} layers have different numbers of heads: {counts}").format(
                    kind=kind, counts=sorted(heads))
        if self.attention_layers is not None:
            for kind, numbers in self.attention_layers.items():
                seen = [layer_number(call.module_name) for call in per_kind.get(kind, [])]
                if seen != numbers:
                    return _("its {kind} attention ran in layers {seen}, not {numbers}").format(
                        kind=kind, seen=seen, numbers=numbers)
        extra = set(per_kind) - set(self._layers())
        if extra:
            return _("it makes attention calls of other kinds: {kinds}").format(
                kinds=", ".join(sorted(extra)))
        return None

    def _check_eager(self, weights: dict[str, np.ndarray]) -> None:
        for kind, array in weights.items():
            if array.shape[2] < 1:
                raise ModelLoadError(_("its {kind} attention has no heads").format(kind=kind))

    def count_tokens(self, text: str, target: str | None = None) -> Lengths:
        """The token counts a trace of ``text`` (and ``target``) would run on, from the
        tokenizer alone; an encoder-decoder writing its own output counts the most it may
        write."""
        n_source = len(self._tokenize(text, truncation=False)["input_ids"])
        if self.family is not Family.ENCODER_DECODER:
            return Lengths(n_source)
        if target is None:
            return Lengths(n_source, MAX_NEW_TOKENS + 1)
        return Lengths(n_source, len(self._tokenize(text_target=target)["input_ids"]) + 1)

    def memory_needed(self, n: Lengths) -> int:
        """Peak bytes of a trace of ``n`` tokens: queries and keys kept and heads computed when
        asked (recorded), or every weight of every layer (eager)."""
        if self.route == EAGER:
            return dense_bytes(self.dims, self.family, n)
        return lazy_bytes(self.dims, self.family, n, element_bytes=self.model.dtype.itemsize)

    # --- tracing ------------------------------------------------------------------------

    def trace(self, text: str, target: str | None = None) -> AttentionTrace:
        """Run the model on ``text`` and capture every layer's attention.

        Args:
            text: the input (decoder-only: the whole prompt; encoder-decoder: the source).
            target: encoder-decoder only: teacher-forced target text; ``None`` traces the
                model's own greedy output.

        Returns:
            an :class:`~model.trace.AttentionTrace` whose arrays are computed lazily, one head
            at a time, from the recorded queries and keys.
        """
        return self.trace_batch([text], None if target is None else [target])[0]

    def generate(self, text: str, max_new_tokens: int | None = None) -> Generation:
        """Continue ``text`` greedily with transformers' KV cache (decoder-only models),
        measuring the cache after every step.

        Step 1 reads the whole prompt at once (the prefill) and caches its keys and values in
        every layer; each later step reads only the token written before it, appending one key
        and one value per K/V head and layer. Writing stops at the end token or after
        ``max_new_tokens`` tokens (default 8).

        Returns:
            a :class:`~model.interface.Generation` whose cache sizes are the bytes of the
            cache's tensors, and whose trace is one causal pass over the prompt and every token
            written but the last (the tokens the cache held at the end).

        Raises:
            ValueError: the text is empty or too long, or the model is not decoder-only.
        """
        if self.family is not Family.DECODER_ONLY:
            raise ValueError(_("{model} is {family}: only decoder-only models generate here, "
                               "one token at a time after a prompt").format(
                model=self.name, family=self.family.value))
        prompt = self.prepare_inputs([text])["input_ids"]  # [batch, prompt]
        limit = max_new_tokens or 8
        end = self.tokenizer.eos_token_id
        fed, cache, chosen, probabilities, tops, sizes, cached = prompt, None, [], [], [], [], []
        with torch.inference_mode():
            for _step in range(limit):
                out = self.model(input_ids=fed, cache=cache, use_cache=True, logits_to_keep=1)
                cache = out.cache
                probs = torch.softmax(out.logits[0, -1].float(), dim=-1)  # [vocab]
                token = int(probs.argmax())
                top = probs.topk(min(TOP_K, probs.numel()))
                chosen.append(token)
                probabilities.append(float(probs[token]))
                tops.append(list(zip(top.indices.tolist(), top.values.tolist())))
                sizes.append([_nbytes(layer.keys) + _nbytes(layer.values)
                              for layer in cache.layers])
                cached.append(int(cache.layers[0].keys.shape[2]))
                if token == end:
                    break
                fed = torch.tensor([[token]], device=self.device)  # [batch, 1]
        ids = [*prompt[0].tolist(), *chosen]
        labels, _special = display_tokens(self.tokenizer, ids)
        n_prompt = prompt.shape[1]
        steps = tuple(
            Step(step=t, token=labels[n_prompt + t], probability=p,
                 top_k=tuple((display_tokens(self.tokenizer, [i])[0][0], float(q))
                             for i, q in top))
            for t, (p, top) in enumerate(zip(probabilities, tops)))
        return Generation(
            model=self.name, prompt_tokens=tuple(labels[:n_prompt]), steps=steps,
            cached_tokens=np.array(cached), self_cache_bytes=np.array(sizes),
            cross_cache_bytes=np.zeros(len(sizes[0]), dtype=np.int64),
            bytes_per_element=cache.layers[0].keys.element_size(),
            trace=self.trace_ids(ids[:-1]))

    def _encode(self, texts: list[str]):
        # padded on the right: every sequence's real tokens keep positions 0, 1, ..., so a
        # sentence in a batch is computed as it is alone (a left-padded decoder would shift
        # its positions)
        return self._tokenize(texts, return_tensors="pt", padding=True, truncation=False,
                              padding_side="right")

    def trace_batch(self, texts: list[str], targets: list[str] | None = None):
        """Trace several texts in one padded batch; one trace per text, padding left out."""
        texts, targets = check_texts(texts, targets)
        if targets is not None and self.family is not Family.ENCODER_DECODER:
            raise ValueError(_("a target text applies to encoder-decoder models; {model} is "
                               "{family}").format(model=self.name, family=self.family.value))
        inputs, steps = self._inputs_and_steps(texts, targets)
        return self._run(inputs, texts, steps)

    def attention_batch(self, texts: list[str]) -> AttentionBatch:
        """Run ``texts`` as one padded batch: a trace per text, and every text's weights of a
        layer at once (:class:`~model.reading.batch.AttentionBatch`), computed on the model's
        device."""
        texts, _targets = check_texts(texts, None)
        inputs = self.prepare_inputs(texts)
        captured = self._captured(inputs)
        traces = tuple(self._make_trace(captured, inputs, b, texts[b]) for b in range(len(texts)))
        per_kind = self._per_kind(captured)
        real = [np.flatnonzero(inputs["attention_mask"][b].bool().cpu().numpy())
                for b in range(len(texts))]

        def weights(name: str, layer: int) -> torch.Tensor:
            if self.route == EAGER:
                return _padded_eager(per_kind[name][layer], real, self.device)
            stores = [t.attention[name] for t in traces]
            return padded_weights(per_kind[name][layer], [s.q_index for s in stores],
                                  [s.k_index for s in stores],
                                  None if self.spread else self.device)

        return AttentionBatch(traces, weights)

    def trace_ids(self, input_ids: list[int]) -> AttentionTrace:
        """Trace exact input ids (single-stack models), e.g. a prompt cut to 2,048 tokens."""
        if self.family is Family.ENCODER_DECODER:
            raise ValueError("trace_ids takes single-stack models; use trace(text, target)")
        ids = torch.tensor([list(input_ids)], device=self.device)  # [batch, pos]
        return self._run({"input_ids": ids, "attention_mask": torch.ones_like(ids)})[0]

    def _record(self, inputs: dict):
        """What a forward pass on ``inputs`` captures: the recorded calls (a list, layer order)
        or, on the eager route, each kind's weights ``[layer, batch, head, query, key]``."""
        if self.route == EAGER:
            try:
                with self._configured_attention(inputs["input_ids"].shape[1]):
                    return eager_weights(self.model, self.family, inputs, self._layers())
            except ModelLoadError as error:
                raise CaptureError(str(error)) from None
        extra = {"logits_to_keep": 1} if self.family is Family.DECODER_ONLY else {}
        with torch.inference_mode(), recording(self.model) as recorder:
            self.model(**inputs, use_cache=False, **extra)
        return recorder.calls

    def _captured(self, inputs: dict):
        """:meth:`_record`, checked: a pass that did not record one exact call per layer (an
        input that took another path) is refused, never shown.

        Raises:
            CaptureError: what did not match.
        """
        captured = self._record(inputs)
        if self.route == RECORDED:
            problem = self._recorded_problem(captured, inputs)
            if problem is not None:
                raise CaptureError(_("the attention of {model} could not be captured exactly for "
                                     "this text: {problem}").format(model=self.name,
                                                                   problem=problem))
        return captured

    def _per_kind(self, captured) -> dict[str, list]:
        """Each kind's layers: recorded calls, or eager ``[batch, head, query, key]`` arrays."""
        if isinstance(captured, dict):
            return {kind: list(array) for kind, array in captured.items()}
        per_kind: dict[str, list] = {}
        for call in captured:
            per_kind.setdefault(self._classify(call.module_name), []).append(call)
        return per_kind

    def _run(self, inputs: dict, texts: list[str] | None = None,
             steps: list | None = None) -> list[AttentionTrace]:
        captured = self._captured(inputs)
        return [self._make_trace(captured, inputs, b, texts[b] if texts else None,
                                 steps[b] if steps else ())
                for b in range(inputs["input_ids"].shape[0])]

    def _unknown(self, ids: np.ndarray, text: str | None) -> dict[int, str]:
        """Positions of ``[UNK]`` among ``ids`` and the text each replaced (read from a fast
        tokenizer's offsets; ``""`` where they are not available). Tokenizers that reuse their
        unknown token as the start, end or padding token (GPT-2 and SmolLM2's
        ``<|endoftext|>``) never mark unknown text with it, so none is reported."""
        tok = self.tokenizer
        unk = tok.unk_token_id
        if unk is None or unk in (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id):
            return {}
        positions = [int(p) for p in np.flatnonzero(ids == unk)]
        if not positions:
            return {}
        spans: list = []
        if text is not None and getattr(self.tokenizer, "is_fast", False):
            spans = self._tokenize(text, return_offsets_mapping=True)["offset_mapping"]
            if len(spans) != len(ids):
                spans = []
        return {p: text[slice(*spans[p])] if spans else "" for p in positions}

    def prepare_inputs(self, texts: list[str], targets: list[str] | None = None) -> dict:
        """The padded model inputs a trace runs on (encoder-decoder: decoder inputs too).

        Raises:
            TypeError: ``texts`` is a single string, or holds something else than strings.
            ValueError: a text is empty, too long or holds invalid Unicode (a lone surrogate).
        """
        inputs, _steps = self._inputs_and_steps(texts, targets)
        return inputs

    def _inputs_and_steps(self, texts: list[str], targets: list[str] | None):
        """:meth:`prepare_inputs`, and the steps of a generated translation (None when none
        was generated)."""
        texts, targets = check_texts(texts, targets)
        if any(not t.strip() for t in texts):
            raise ValueError(_("the text is empty"))
        enc = self._encode(texts).to(self.device)
        limit = self.positions.max_positions
        if limit and enc["input_ids"].shape[1] > limit:
            raise ValueError(_("the text is {count} tokens long; {model} reads at most {limit}: "
                               "shorten it").format(count=enc["input_ids"].shape[1],
                                                    model=self.name, limit=limit))
        inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        if self.family is Family.ENCODER_DECODER:
            inputs.update(self._decoder_inputs(enc, targets))
        return inputs, inputs.pop(_STEPS, None)

    def _generated(self, enc) -> dict:
        """The decoder inputs of the model's own greedy translation of ``enc`` and its steps.

        Row t reads token t and writes token t + 1, as the own translator's rows do: the
        decoder runs on the start token and every written token but the last (the end token,
        which no row reads), and step t is the token row t chose, with the probability and the
        most probable tokens of the distribution ``generate`` chose it from.
        """
        forced = {} if self.forced_bos is None else {"forced_bos_token_id": self.forced_bos}
        with torch.inference_mode():
            out = self.model.generate(
                **enc, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1,
                output_scores=True, return_dict_in_generate=True, **forced)
        generated = out.sequences  # [batch, 1 + written]
        end = self.model.generation_config.eos_token_id
        end = self.config.eos_token_id if end is None else end
        ends = set(end if isinstance(end, (list, tuple)) else [end])
        steps = []
        for b in range(generated.shape[0]):
            row = []
            for t, scores in enumerate(out.scores):
                probs = torch.softmax(scores[b].float(), dim=-1)  # [vocab]
                token = int(generated[b, t + 1])
                top = probs.topk(min(TOP_K, probs.numel()))
                row.append(Step(
                    step=t, token=display_tokens(self.tokenizer, [token])[0][0],
                    probability=float(probs[token]),
                    top_k=tuple((display_tokens(self.tokenizer, [i])[0][0], float(q))
                                for i, q in zip(top.indices.tolist(), top.values.tolist()))))
                if token in ends:
                    break
            steps.append(tuple(row))
        decoder_ids = generated[:, :-1]
        mask = torch.zeros_like(decoder_ids)
        for b, row in enumerate(steps):
            mask[b, :len(row)] = 1  # the start token (which may be the pad token) and every read
        return {"decoder_input_ids": decoder_ids, "decoder_attention_mask": mask, _STEPS: steps}

    def _decoder_start(self) -> int:
        """The first decoder token, as the model's ``generate`` chooses it: the generation
        config's ``decoder_start_token_id``, else the config's, else its start or padding
        token."""
        for source in (self.model.generation_config, self.config):
            start = getattr(source, "decoder_start_token_id", None)
            if isinstance(start, (list, tuple)):
                start = start[0] if start else None
            if start is not None:
                return int(start)
        start = first_set(self.config, "bos_token_id", "pad_token_id")
        if start is None:
            raise ModelLoadError(_("{model} names no decoder start token (decoder_start_token_id "
                                   "in its config)").format(model=repr(self.name)))
        return int(start)

    def _decoder_inputs(self, enc, targets):
        if targets is None:
            return self._generated(enc)
        labels = self._tokenize(text_target=targets, return_tensors="pt", padding=True)
        label_ids = labels["input_ids"].to(self.device)
        # the model's own shift of labels into decoder inputs (mBART moves its language code to
        # the front), else shifted right behind the start token, as generate starts (NLLB,
        # M2M100 and Blenderbot have no prepare_decoder_input_ids_from_labels)
        prepare = getattr(self.model, "prepare_decoder_input_ids_from_labels", None)
        try:
            decoder_ids = prepare(labels=label_ids) if prepare is not None else None
        except (AttributeError, TypeError, ValueError):  # a config without the start token
            decoder_ids = None
        if decoder_ids is None:
            decoder_ids = torch.cat([torch.full_like(label_ids[:, :1], self._decoder_start()),
                                     label_ids[:, :-1]], dim=1)
        label_mask = labels["attention_mask"].to(self.device)
        mask = torch.cat([torch.ones_like(label_mask[:, :1]), label_mask[:, :-1]], dim=1)
        return {"decoder_input_ids": decoder_ids, "decoder_attention_mask": mask}

    def _classify(self, name: str) -> str:
        lowered = name.lower()
        cross = any(s in lowered for s in ("encoder_attn", "encdecattention", "crossattention",
                                           "cross_attn"))
        if self.family.single_stack:
            return self.family.kinds[0]
        stack = "decoder" if ".decoder." in f".{lowered}." else "encoder"
        return f"{stack}.{'cross' if cross else 'self'}"

    def _make_trace(self, captured, inputs, b: int, text: str | None = None,
                    steps: tuple = ()) -> AttentionTrace:
        per_kind = self._per_kind(captured)
        real = inputs["attention_mask"][b].bool().cpu().numpy()
        src_index = np.flatnonzero(real)
        src_ids = inputs["input_ids"][b].cpu().numpy()[src_index]
        if self.family is Family.ENCODER_DECODER:
            dec_real = inputs["decoder_attention_mask"][b].bool().cpu().numpy()
            tgt_index = np.flatnonzero(dec_real)
            tgt_ids = inputs["decoder_input_ids"][b].cpu().numpy()[tgt_index]
            src_labels, src_special = display_tokens(self.tokenizer, src_ids)
            tgt_labels, tgt_special = display_tokens(self.tokenizer, tgt_ids)
            tokens = dict(source_tokens=src_labels, source_ids=src_ids, target_tokens=tgt_labels,
                          target_ids=tgt_ids)
            index = {"encoder.self": (src_index, src_index),
                     "decoder.self": (tgt_index, tgt_index),
                     "decoder.cross": (tgt_index, src_index)}
            special = {"source": src_special, "target": tgt_special}
            unknown = {"source": self._unknown(src_ids, text)}
        else:
            labels, special_positions = display_tokens(self.tokenizer, src_ids)
            tokens = dict(tokens=labels, ids=src_ids)
            index = {name: (src_index, src_index) for name in per_kind}
            special = {"tokens": special_positions}
            unknown = {"tokens": self._unknown(src_ids, text)}
        if self.route == EAGER:
            attention = {name: EagerStore(per_kind[name], b, *index[name],
                                          causal=name == "decoder.self")
                         for name in per_kind}
            n_heads = next(iter(attention.values())).shape[1]
            n_kv_heads = self.dims.n_kv_heads if n_heads % max(1, self.dims.n_kv_heads) == 0 \
                and self.dims.n_heads == n_heads else n_heads
        else:
            n_tokens = {"encoder.self": inputs["input_ids"].shape[1],
                        "decoder.cross": inputs["input_ids"].shape[1]}
            n_tokens["decoder.self"] = inputs["decoder_input_ids"].shape[1] \
                if "decoder_input_ids" in inputs else inputs["input_ids"].shape[1]
            device = None if self.spread else self.device  # spread: each layer where it ran
            attention = {name: LazyAttention(per_kind[name], b, *index[name], device=device,
                                             n_tokens=n_tokens[name])
                         for name in per_kind}
            first = next(iter(attention.values()))
            n_heads, n_kv_heads = first.n_heads, first.n_kv_heads
        return AttentionTrace(
            model=self.name, family=self.family, attention=attention,
            n_heads=n_heads, n_kv_heads=n_kv_heads,
            positional=self.positions.scheme, device=self._devices(),
            dtype=self.dtype, special_positions=special,
            unknown={axis: found for axis, found in unknown.items() if found},
            meta={**model_facts(self.dims, self.positions, model_type=self.config.model_type,
                                capture=self.route),
                  **({} if self.attention_layers is None else
                     {"attention_layers": self.attention_layers})},
            steps=steps, **tokens)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _ready(model, device: torch.device):
    """``model`` on ``device`` in eval mode (a model placed by a device map stays where
    accelerate put it), with the input language an X-MOD model needs set (English where it has
    an adapter for it, else its first language)."""
    languages = list(getattr(model.config, "languages", None) or [])
    if languages and getattr(model.config, "default_language", "") is None and \
            hasattr(model, "set_default_language"):
        model.set_default_language("en_XX" if "en_XX" in languages else languages[0])
    if getattr(model, "hf_device_map", None):
        return model.eval()
    return model.to(device).eval()


def _placement(device, device_t: torch.device, device_map, max_memory,
               offload_folder) -> dict:
    """The placement keywords of ``from_pretrained``: those given, or accelerate's
    ``device_map="auto"`` over every GPU (each keeping :data:`GPU_MARGIN_SHARE` of its free
    memory, at least :data:`GPU_MARGIN_BYTES`) where ``device`` is ``"auto"`` and torch sees
    several, else none (the model is moved to ``device_t`` whole)."""
    if device_map is not None:
        given = {"device_map": device_map, "max_memory": max_memory,
                 "offload_folder": offload_folder}
        return {key: value for key, value in given.items() if value is not None}
    if (device is None or str(device).strip() == "auto") and device_t.type == "cuda" and \
            torch.cuda.device_count() > 1:
        if max_memory is None:
            max_memory = {}
            for index in range(torch.cuda.device_count()):
                free = int(torch.cuda.mem_get_info(index)[0])
                max_memory[index] = max(0, free - max(int(free * GPU_MARGIN_SHARE),
                                                      GPU_MARGIN_BYTES))
        return {"device_map": "auto", "max_memory": max_memory}
    return {}


def _input_device(model, device: torch.device) -> torch.device:
    """Where a model's inputs go: ``device``, or for a model placed by a device map the device
    of its first placed module (the CPU for one offloaded to disk)."""
    placed = getattr(model, "hf_device_map", None)
    if not placed:
        return device
    first = next(iter(placed.values()))
    if isinstance(first, int):
        return torch.device("cuda", first)
    first = str(first)
    return torch.device("cpu") if first in ("disk", "meta") else torch.device(first)


def _size(n_bytes: float) -> str:
    """``12.3 GB`` (units of 10⁹ bytes), or MB below a tenth of a GB."""
    if n_bytes >= 1e8:
        return f"{n_bytes / 1e9:.1f} GB"
    return f"{n_bytes / 1e6:.1f} MB"


def weight_count(source: str, local_only: bool, config, family: Family,
                 trust_remote_code: bool = False) -> int | None:
    """How many numbers a checkpoint's weights hold, without reading or allocating them: from
    the headers of a local folder's safetensors files, else counted on a model built from
    ``config`` on the meta device (accelerate's ``init_empty_weights``); None when neither
    works."""
    folder = Path(source)
    if local_only and folder.is_dir():
        found = _safetensors_count(folder)
        if found:
            return found
    try:
        from accelerate import init_empty_weights

        with init_empty_weights(), _quiet_transformers():
            empty = auto_class(family).from_config(config, trust_remote_code=trust_remote_code)
        empty.tie_weights()  # not tied on the meta device until asked: counted once
    except (ImportError, *LOAD_ERRORS):
        return None
    return sum(p.numel() for p in empty.parameters())


def _safetensors_count(folder: Path) -> int | None:
    """The numbers in the safetensors files of ``folder`` (those its index names, when it has
    one), read from their headers; None when it holds none or one cannot be read."""
    import json

    index = folder / "model.safetensors.index.json"
    try:
        if index.is_file():
            names = set(json.loads(index.read_text())["weight_map"].values())
            files = [folder / name for name in sorted(names)]
        else:
            files = [folder / "model.safetensors"] if (folder / "model.safetensors").is_file() \
                else sorted(folder.glob("*.safetensors"))
        total = 0
        for file in files:
            with open(file, "rb") as handle:
                size = struct.unpack("<Q", handle.read(8))[0]
                header = json.loads(handle.read(size))
            for name, entry in header.items():
                if name != "__metadata__":
                    total += int(np.prod(entry["shape"], dtype=np.int64))
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
    return total or None


def _check_fits(spec: str, source: str, local_only: bool, config, family: Family,
                dtype: torch.dtype, device: torch.device, placement: dict,
                trust_remote_code: bool) -> None:
    """Refuse, before any weight is read, a checkpoint whose weights in ``dtype`` are larger
    than the memory available where they would go: RAM on the CPU, the free memory of the GPU
    (of every GPU, less their margins, when spread over several).

    Raises:
        ModelLoadError: with both sizes.
    """
    count = weight_count(source, local_only, config, family, trust_remote_code)
    if count is None:
        return  # not counted: transformers reports what goes wrong
    need = count * dtype.itemsize
    limits = placement.get("max_memory")
    if limits:
        have = sum(int(v) for v in limits.values())
        where = _("the free memory of its {count} GPUs, less a margin on each").format(
            count=len(limits))
    else:
        have = available_memory(device)
        where = _("free GPU memory") if device.type == "cuda" else _("available RAM")
    if need > have:
        raise ModelLoadError(_("{spec} is too large for this machine: its weights need about "
                               "{need} in {dtype}; this machine has {have} available "
                               "({where})").format(spec=repr(spec), need=_size(need),
                                                   dtype=dtype_name(dtype), have=_size(have),
                                                   where=where))


# Models whose self-attention keys are the tokens' followed by keys that are not tokens, each
# allowed per query by the mask the call receives (DeepSeek-V4's compressed keys, chosen per
# query by its indexer): the keys after the tokens share each row's softmax and are not shown.
KEYS_AFTER_TOKENS = {"deepseek_v4"}
_LAYER_NUMBER = re.compile(r"\.(?:layers|layer|h|blocks|block)\.(\d+)\.")
# Layer types (a config's ``layer_types``) that are attention with weights per token pair.
ATTENTION_LAYER_TYPES = {"attention", "full_attention", "sliding_attention", "chunked_attention",
                         "global_attention", "local_attention"}


def layer_number(module_name: str) -> int | None:
    """The layer an attention module belongs to, from its name (``model.layers.3.self_attn``)."""
    found = _LAYER_NUMBER.search(f".{module_name}.")
    return int(found.group(1)) if found else None


def config_attention_layers(config) -> list[int] | None:
    """The layers a hybrid config's ``layer_types`` names as attention, or None."""
    types = getattr(config, "layer_types", None)
    if not isinstance(types, (list, tuple)):
        return None
    return [i for i, kind in enumerate(types) if kind in ATTENTION_LAYER_TYPES]


# The codes a multilingual translation tokenizer knows Chinese by (NLLB, M2M100): the language a
# translation is written in when the tokenizer names none (the lesson's English→Chinese).
CHINESE_CODES = ("zho_Hans", "zh", "zh_CN")  # NLLB, M2M100, mBART-50


def choose_target_language(tokenizer) -> int | None:
    """The token a multilingual translation model must write first (NLLB's and M2M100's
    ``forced_bos_token_id``): the tokenizer's target language, else Chinese, which it is then set
    to; None for a tokenizer without languages."""
    if not hasattr(tokenizer, "tgt_lang"):
        return None

    def lang_id(code: str) -> int | None:
        getter = getattr(tokenizer, "get_lang_id", None)
        try:
            found = getter(code) if getter else tokenizer.convert_tokens_to_ids(code)
        except (KeyError, ValueError):
            return None
        return None if found is None or found == tokenizer.unk_token_id else int(found)

    if tokenizer.tgt_lang is not None and lang_id(tokenizer.tgt_lang) is not None:
        return lang_id(tokenizer.tgt_lang)
    for code in CHINESE_CODES:
        if lang_id(code) is not None:
            tokenizer.tgt_lang = code
            return lang_id(code)
    return None


_QUIET = threading.Lock()


@contextlib.contextmanager
def _quiet_transformers():
    """transformers' log quiet: switching a model's attention implementation warns of models
    that cannot switch, which :meth:`HFModel._set_route` handles."""
    from transformers.utils import logging

    with _QUIET:  # one at a time, so that the level put back is the one found
        level = logging.get_verbosity()
        logging.set_verbosity_error()
        try:
            yield
        finally:
            logging.set_verbosity(level)


class EagerStore(DenseStore):
    """One kind of a trace on the eager route: the weights the model returned, this sequence's
    real queries and keys, with each layer's mask read from them (a key is allowed where some
    head gives it weight)."""

    def __init__(self, layers: list[np.ndarray], batch: int, q_index: np.ndarray,
                 k_index: np.ndarray, causal: bool):
        weights = np.stack([layer[batch][:, q_index][:, :, k_index] for layer in layers])
        super().__init__(weights, causal=causal)
        # a key is allowed where some head gives it weight
        self._masks = [readonly((w > 0).any(axis=0)) for w in self.weights]

    def mask(self, layer: int) -> np.ndarray:
        return self._masks[self._layer(layer)]


def _padded_eager(layer: np.ndarray, real: list[np.ndarray], device) -> torch.Tensor:
    """Every sequence of one eager layer ``[batch, head, query, key]``, the batch's padding left
    out as :func:`~model.hf.capture.padded_weights` does: real rows and keys first, zeros after."""
    n = max((len(r) for r in real), default=0)
    out = torch.zeros((len(real), layer.shape[1], n, n), dtype=torch.float32, device=device)
    for b, index in enumerate(real):
        rows = np.ascontiguousarray(layer[b][:, index][:, :, index])
        out[b, :, :len(index), :len(index)] = torch.from_numpy(rows).to(device)
    return out
