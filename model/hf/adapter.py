"""Hugging Face checkpoints as a :class:`~model.interface.LoadedModel`.

:meth:`HFModel.load` resolves a SPEC (:mod:`.checkpoints`), reads the family, sizes and positions
from the config (:mod:`.config`), loads tokenizer and model with transformers' Auto classes (never
``trust_remote_code`` unless asked), in eval mode, on CUDA when present, with attention routed
through :mod:`.capture` so that tracing costs about one fused forward pass.
"""

from __future__ import annotations

import pickle
import re
import struct
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoTokenizer

from i18n import _
from model.budget import Lengths, lazy_bytes
from model.device import resolve_device
from model.errors import ModelLoadError
from model.hf.capture import ATTN_EAGER, ATTN_SDPA, LazyAttention, padded_weights, recording
from model.hf.checkpoints import cache_dir, from_pretrained, resolve
from model.hf.config import auto_class, detect_family, read_dims, read_positions
from model.hf.labels import display_tokens
from model.interface import Generation
from model.meta import TOP_K, Family, ModelDims, PositionInfo, Step, model_facts
from model.policy import OPEN, LoadPolicy
from model.reading.batch import AttentionBatch
from model.text import check_texts
from model.trace import AttentionTrace

MAX_NEW_TOKENS = 64
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


class HFModel:
    """A Hugging Face model ready to trace text (a ``LoadedModel``, like the own models).

    Args:
        name: the SPEC it was loaded as.
        model: the transformers model, in eval mode on ``device``.
        tokenizer: its tokenizer.
        family: its family (from the config).
        device: where it runs.
        dims: its sizes, when already read from the config (else read here).
    """

    def __init__(self, name: str, model, tokenizer, family: Family, device: torch.device,
                 dims: ModelDims | None = None):
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.family = Family(family)
        self.device = device
        self.config = model.config
        self.dims: ModelDims = dims or read_dims(self.config, self.family)
        self.positions: PositionInfo = read_positions(self.config)

    @property
    def module(self) -> torch.nn.Module:
        return self.model

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
             policy: LoadPolicy = OPEN) -> HFModel:
        """Load ``spec`` (see :func:`~model.hf.checkpoints.resolve`) on ``device``, in eval
        mode, from where ``policy`` allows.

        Raises:
            ModelLoadError: for every reason a checkpoint cannot be loaded (a missing or
                refused place, a truncated or foreign file, a config without attention, weights
                that do not fit the config, pickled weights where they are refused, ...), with
                a one-line message that names the spec, never the server's own folders.
        """
        device_t = resolve_device(device)
        common = dict(trust_remote_code=trust_remote_code)
        weights = {} if policy.pickle else {"use_safetensors": True}
        source = spec
        try:
            source, local_only = resolve(spec, trust_remote_code, policy)
            config = from_pretrained(AutoConfig, source, local_only, policy, **common)
            family = detect_family(config)
            dims = read_dims(config, family)  # refuse a config without attention before weights
            tokenizer = from_pretrained(AutoTokenizer, source, local_only, policy, **common)
            model = from_pretrained(auto_class(family), source, local_only, policy,
                                    dtype=torch.float32, **common, **weights)
        except ModelLoadError:
            raise
        except LOAD_ERRORS as error:
            raise ModelLoadError(_load_message(spec, source, error, policy)) from None
        model.set_attn_implementation(ATTN_SDPA if model._supports_sdpa else ATTN_EAGER)
        model.to(device_t).eval()
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        return cls(spec, model, tokenizer, family, device_t, dims)

    def count_tokens(self, text: str, target: str | None = None) -> Lengths:
        """The token counts a trace of ``text`` (and ``target``) would run on, from the
        tokenizer alone; an encoder-decoder writing its own output counts the most it may
        write."""
        n_source = len(self.tokenizer(text, truncation=False)["input_ids"])
        if self.family is not Family.ENCODER_DECODER:
            return Lengths(n_source)
        if target is None:
            return Lengths(n_source, MAX_NEW_TOKENS + 1)
        return Lengths(n_source, len(self.tokenizer(text_target=target)["input_ids"]) + 1)

    def memory_needed(self, n: Lengths) -> int:
        """Peak bytes of a trace of ``n`` tokens (queries and keys kept, heads computed when
        asked)."""
        return lazy_bytes(self.dims, self.family, n)

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
        return self.tokenizer(texts, return_tensors="pt", padding=True, truncation=False,
                              padding_side="right")

    def trace_batch(self, texts: list[str], targets: list[str] | None = None):
        """Trace several texts in one padded batch; one trace per text, padding left out."""
        texts, targets = check_texts(texts, targets)
        if targets is not None and self.family is not Family.ENCODER_DECODER:
            raise ValueError(_("a target text applies to encoder-decoder models; {model} is "
                               "{family}").format(model=self.name, family=self.family.value))
        return self._run(self.prepare_inputs(texts, targets), texts)

    def attention_batch(self, texts: list[str]) -> AttentionBatch:
        """Run ``texts`` as one padded batch: a trace per text, and every text's weights of a
        layer at once (:class:`~model.reading.batch.AttentionBatch`), computed on the model's
        device."""
        texts, _targets = check_texts(texts, None)
        inputs = self.prepare_inputs(texts)
        calls = self._record(inputs)
        traces = tuple(self._make_trace(calls, inputs, b, texts[b]) for b in range(len(texts)))
        per_kind: dict[str, list] = {}
        for call in calls:
            per_kind.setdefault(self._classify(call.module_name), []).append(call)

        def weights(name: str, layer: int) -> torch.Tensor:
            stores = [t.attention[name] for t in traces]
            return padded_weights(per_kind[name][layer], [s.q_index for s in stores],
                                  [s.k_index for s in stores], self.device)

        return AttentionBatch(traces, weights)

    def trace_ids(self, input_ids: list[int]) -> AttentionTrace:
        """Trace exact input ids (single-stack models), e.g. a prompt cut to 2,048 tokens."""
        if self.family is Family.ENCODER_DECODER:
            raise ValueError("trace_ids takes single-stack models; use trace(text, target)")
        ids = torch.tensor([list(input_ids)], device=self.device)  # [batch, pos]
        return self._run({"input_ids": ids, "attention_mask": torch.ones_like(ids)})[0]

    def _record(self, inputs: dict) -> list:
        extra = {"logits_to_keep": 1} if self.family is Family.DECODER_ONLY else {}
        with torch.inference_mode(), recording(self.model) as recorder:
            self.model(**inputs, use_cache=False, **extra)
        return recorder.calls

    def _run(self, inputs: dict, texts: list[str] | None = None) -> list[AttentionTrace]:
        calls = self._record(inputs)
        return [self._make_trace(calls, inputs, b, texts[b] if texts else None)
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
            spans = self.tokenizer(text, return_offsets_mapping=True)["offset_mapping"]
            if len(spans) != len(ids):
                spans = []
        return {p: text[slice(*spans[p])] if spans else "" for p in positions}

    def prepare_inputs(self, texts: list[str], targets: list[str] | None = None) -> dict:
        """The padded model inputs a trace runs on (encoder-decoder: decoder inputs too).

        Raises:
            TypeError: ``texts`` is a single string, or holds something else than strings.
            ValueError: a text is empty, too long or holds invalid Unicode (a lone surrogate).
        """
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
        return inputs

    def _decoder_inputs(self, enc, targets):
        if targets is None:
            with torch.inference_mode():
                generated = self.model.generate(
                    **enc, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1)
            pad = self.config.pad_token_id
            mask = (generated != pad).long()
            mask[:, 0] = 1  # the start token may be the pad token (T5)
            return {"decoder_input_ids": generated, "decoder_attention_mask": mask}
        labels = self.tokenizer(text_target=targets, return_tensors="pt", padding=True)
        label_ids = labels["input_ids"].to(self.device)
        decoder_ids = self.model.prepare_decoder_input_ids_from_labels(labels=label_ids)
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

    def _make_trace(self, calls, inputs, b: int, text: str | None = None) -> AttentionTrace:
        per_kind: dict[str, list] = {}
        for call in calls:
            per_kind.setdefault(self._classify(call.module_name), []).append(call)
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
        attention = {name: LazyAttention(per_kind[name], b, *index[name], device=self.device)
                     for name in per_kind}
        first = next(iter(attention.values()))
        return AttentionTrace(
            model=self.name, family=self.family, attention=attention,
            n_heads=first.n_heads, n_kv_heads=first.n_kv_heads,
            positional=self.positions.scheme, device=str(self.device),
            dtype=str(self.model.dtype).removeprefix("torch."), special_positions=special,
            unknown={axis: found for axis, found in unknown.items() if found},
            meta=model_facts(self.dims, self.positions, model_type=self.config.model_type),
            **tokens)


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()
