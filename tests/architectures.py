"""The architecture sweep: every text model type transformers lists in its causal-LM, masked-LM
and seq-to-seq auto mappings, as a tiny random checkpoint, loaded through :func:`model.load`,
traced, and compared head by head with transformers' own eager ``output_attentions``.

A type passes when its trace is exact (every kind, layer and head to 1e-5) or when it is refused
at load with a typed error from :mod:`model.errors` whose message says why. A type transformers
itself cannot build from a small text-only config is *skipped* with the reason. Run it as
``python -m tests.architectures [TYPE ...]`` to print the table; ``tests/unit/
test_architectures.py`` runs it in the suite.

Checkpoints are built once per transformers version and version of this file under
``$ATTENTION_EXPLORER_SWEEP`` (default ``~/.cache/attention-explorer/sweep-<version>-<hash>``),
each with the byte-level tokenizer of
:func:`tests.helpers.byte_level_tokenizer`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

TEXTS = ["The cat sat on the mat.", "A dog slept under the table yesterday because it was tired."]
TARGETS = ["猫 坐 在 垫子 上", "the cat"]
ATOL = 1e-5

# Sizes given to every config that has the field (each is a field of some config).
SMALL = {
    "hidden_size": 32, "d_model": 32, "n_embd": 32, "dim": 32, "embed_dim": 32, "d_embed": 32,
    "embedding_size": 32, "word_embed_proj_dim": 32, "n_embed": 32,
    "num_hidden_layers": 2, "num_layers": 2, "n_layer": 2, "n_layers": 2, "encoder_layers": 2,
    "decoder_layers": 2, "num_decoder_layers": 2, "num_encoder_layers": 2,
    "num_attention_heads": 4, "n_head": 4, "n_heads": 4, "num_heads": 4,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 8, "d_kv": 8, "d_head": 8,
    "intermediate_size": 64, "d_ff": 64, "ffn_dim": 64, "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64, "n_inner": 64, "hidden_dim": 64, "d_inner": 64,
    "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16,
    "shared_experts_intermediate_size": 16, "ffn_hidden_size": 64, "expert_ffn_hidden_size": 16,
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "num_experts_per_token": 2, "n_group": 1, "topk_group": 1,
    "max_position_embeddings": 128, "n_positions": 128, "n_ctx": 128,
    "sliding_window": 4, "attention_window": 4,
    "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2,
    # weights drawn wide enough that scores spread over several units: near-uniform rows would
    # hide a missing soft-cap, scale or bias
    "initializer_range": 0.5, "init_std": 0.5, "init_range": 0.5,
    # multi-head latent attention (and its indexer): the query/key head is nope + rope = 8 wide
    "q_lora_rank": 16, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 4,
    "v_head_dim": 8, "index_head_dim": 8, "index_n_heads": 2,
    "rotary_dim": 4, "emb_dim": 32, "hidden_size_global": 32, "hidden_size_per_layer_input": 8,
    "swa_num_attention_heads": 4, "swa_num_key_value_heads": 2, "swa_head_dim": 8,
    "sliding_window_size": 4, "loop_gate_rank": 8,
}
# Fields the size of the vocabulary (as :data:`SMALL` gives the rest).
VOCABULARIES = ("vocab_size", "unpadded_vocab_size", "vocab_size_per_layer_input")
# Configs that hold another modality: not text models.
NOT_TEXT = ("vision_config", "audio_config", "speech_config", "image_size", "num_mel_bins",
            "vision_tower", "audio_tower", "audio_encoder")
# Fields of the encoder alone: a causal LM of such a type is its text decoder (WhisperForCausalLM).
ENCODER_ONLY = ("num_mel_bins",)


@dataclass
class Row:
    """One model type's result: ``exact``, ``refused``, ``skipped``, ``wrong`` or ``error``."""

    model_type: str
    task: str
    status: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status in ("exact", "refused", "skipped")


def model_types() -> dict[str, str]:
    """Every type of the three mappings, with the task it is built for: ``seq2seq`` (listed
    there), ``encoder`` (a masked LM, built as the base model) or ``causal``."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    )

    types = {}
    for name in sorted(set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(
            MODEL_FOR_MASKED_LM_MAPPING_NAMES) | set(MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)):
        types[name] = ("seq2seq" if name in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES else
                       "encoder" if name in MODEL_FOR_MASKED_LM_MAPPING_NAMES else "causal")
    return types


def auto_class(task: str):
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    return {"seq2seq": AutoModelForSeq2SeqLM, "encoder": AutoModel,
            "causal": AutoModelForCausalLM}[task]


class Skip(Exception):
    """transformers cannot build this type as a small text model; the message says why."""


def tiny_config(model_type: str, vocab: int, task: str = "causal"):
    """A small config of ``model_type`` for ``task``: the class's defaults with every size of
    :data:`SMALL` it has (and the vocabulary) made small, its per-layer lists cut to the number
    of layers, then the type's :data:`OVERRIDES`."""
    from transformers import CONFIG_MAPPING

    if model_type in SKIPS:
        raise Skip(SKIPS[model_type])
    try:
        config_class = CONFIG_MAPPING[model_type]
        default = config_class()
    except Exception as error:  # noqa: BLE001 - the reason is the row's detail
        raise Skip(f"no default config: {type(error).__name__}: {_first_line(error)}") from None
    other = [k for k in NOT_TEXT if task != "causal" or k not in ENCODER_ONLY]
    present = _holds(default.to_dict(), other)
    if present or getattr(default, "text_config", None) is not None:
        raise Skip("not text-only: the config holds " + (", ".join(present) or "text_config"))
    kwargs = _small(default, vocab)
    if task == "seq2seq":  # as every real encoder-decoder checkpoint's config.json states it
        kwargs["decoder_start_token_id"] = SMALL["decoder_start_token_id"]
    kwargs.update(OVERRIDES.get(model_type, {}))
    try:
        return config_class(**kwargs)
    except Exception as error:  # noqa: BLE001
        raise Skip(f"no small config: {type(error).__name__}: {_first_line(error)}") from None


def _holds(fields: dict, names, where: str = "") -> list[str]:
    """The fields of ``names`` that ``fields`` (a config's dict) or a sub-config of it has."""
    found = [where + k for k in fields if k in names]
    for name, value in fields.items():
        if isinstance(value, dict) and "model_type" in value and name not in names:
            found += _holds(value, names, f"{where}{name}.")
    return found


# Fields that count the layers (the first one a config has is its depth).
DEPTHS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")


def _small(config, vocab: int) -> dict:
    """The keyword arguments that make ``config`` small: every field of :data:`SMALL` it has,
    the vocabulary, each per-layer list cut to the new depth, and the same for each sub-config
    it holds (as a dict)."""
    fields = {**config.to_dict(), **vars(config)}
    kwargs = {k: v for k, v in SMALL.items() if k in fields}
    kwargs.update({k: vocab for k in VOCABULARIES  # a 0 there turns the table off
                   if k in fields and (k == "vocab_size" or fields[k])})
    if "kv_lora_rank" in kwargs:  # latent attention: every head has its own keys and values
        if "num_key_value_heads" in kwargs:
            kwargs["num_key_value_heads"] = kwargs.get("num_attention_heads", 4)
        if "head_dim" in kwargs and fields.get("head_dim") == fields.get("qk_rope_head_dim"):
            kwargs["head_dim"] = kwargs["qk_rope_head_dim"]  # there the rotary width
    depth = next((k for k in DEPTHS if isinstance(fields.get(k), int)), None)
    if depth is not None and depth in kwargs:
        for name, value in fields.items():
            if (name not in kwargs and isinstance(value, list) and len(value) == fields[depth]
                    and len(value) != kwargs[depth] and not name.startswith("_")):
                kwargs[name] = _per_layer(value, kwargs[depth])
    for name, value in vars(config).items():
        if hasattr(value, "to_dict") and hasattr(value, "model_type") and name != "text_config":
            kwargs[name] = {**value.to_dict(), **_small(value, vocab)}
    return kwargs


def _per_layer(values: list, depth: int) -> list:
    """A per-layer list of ``depth`` entries with each kind of ``values`` (in their first
    order) as far as they go, so a 2-layer model still has, say, a sliding and a full layer."""
    kinds = []
    for value in values:
        if value not in kinds:
            kinds.append(value)
    return (kinds + [kinds[-1]] * depth)[:depth] if len(kinds) < depth else kinds[:depth]


# A tiny model has well under this many parameters; more means a size the config keeps elsewhere.
MAX_PARAMETERS = 5_000_000


# Per type, what the generic sizes get wrong.
OVERRIDES: dict[str, dict] = {
    # Jamba's attention layers come every 8 layers from layer 4: one of its two layers here
    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1},
    # its router splits the experts into n_group groups: 4 experts in 2 groups of 2
    "bailing_hybrid": {"n_group": 2, "topk_group": 1},
    # RecurrentGemma repeats (recurrent, recurrent, attention): one of each layer kind here
    "recurrent_gemma": {"block_types": ["recurrent", "attention"]},
    # blocks of local_radius + 1 = 4 tokens: the sentences span several blocks
    "longt5": {"local_radius": 3},
    "xmod": {"default_language": "en_XX"},
    "longcat_flash": {"zero_expert_num": 2, "moe_topk": 2},
    # its attention config keeps the rotary base (DbrxAttention reads attn_config.rope_theta)
    # and the clip (clip_qkv None fails in torch.clamp), as its checkpoints do
    "dbrx": {"attn_config": {"kv_n_heads": 2, "rope_theta": 10_000.0, "clip_qkv": 8.0}},
    "dots1": {"n_shared_experts": 1},  # the default None breaks its MoE layer
    "lfm2_moe": {"layer_types": ["conv", "full_attention"], "num_dense_layers": 1},
    # no default rotary per layer type; the M-RoPE sections split head_dim / 2 = 4
    "cohere_compass_text": {"rope_parameters": {"full_attention": {
        "rope_type": "default", "rope_theta": 10_000.0, "mrope_section": [2, 1, 1]}}},
    "luke": {"entity_vocab_size": 16, "entity_emb_size": 16},
    "roc_bert": {"shape_vocab_size": 16, "shape_embed_dim": 8, "pronunciation_vocab_size": 16,
                 "pronunciation_embed_dim": 8},
    "blt": {"encoder_hash_byte_group_vocab": 64},
    "gemma4_text": {"global_head_dim": 16},  # the full layers' head width (default 512)
    # every kind of layer computes its cache before the last num_kv_shared_layers reuse it
    "gemma3n_text": {"num_hidden_layers": 4, "num_kv_shared_layers": 2, "laurel_rank": 8,
                     "layer_types": ["sliding_attention", "full_attention"] * 2,
                     "activation_sparsity_pattern": [0.95, 0.0, 0.0, 0.0]},
    # the axial position embeddings split hidden_size (16 + 16) and the positions (8 x 16)
    "reformer": {"axial_pos_embds_dim": [16, 16], "axial_pos_shape": [8, 16],
                 "attention_head_size": 8, "feed_forward_size": 64,
                 "local_attn_chunk_length": 4, "lsh_attn_chunk_length": 4},
    # Mamba-2 heads split mamba_expand * hidden_size = 64; bamba's one attention layer is the 2nd
    "bamba": {"attn_layer_indices": [1], "mamba_n_heads": 4, "mamba_d_state": 16,
              "mamba_chunk_size": 16},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"], "mamba_n_heads": 4,
                         "mamba_d_state": 16, "mamba_chunk_size": 16},
    "mamba2": {"num_heads": 8, "state_size": 16, "chunk_size": 16},
    # its shared transformer is tied across the hybrid layers: it needs two of them
    "zamba": {"num_hidden_layers": 3, "head_dim": 16,
              "layers_block_type": ["linear_attention", "hybrid", "hybrid"]},
    "zaya": {"num_experts_per_tok": 1, "router_hidden_size": 16},  # it routes to one expert
    "esmc": {"num_key_value_heads": 4},  # no grouped-query attention
    # 0.25 of the full layers' head dims rotate, in M-RoPE pairs of pairs: 16 wide
    "neomme": {"head_dim": 16, "embedding_rank": 16, "embedding_dim": 16},
    # its indexed layers need the QSA indexer, which the defaults leave unset
    "qwen4_exp_text": {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 8,
                       "indexer_budget": 8, "indexer_compress_ratio": 2},
    # two blocks of one layer (its depth is sum(block_sizes)); the auto class reads architectures
    "funnel": {"block_sizes": [1, 1], "architectures": ["FunnelModel"]},
    # its sliding layers' latent attention, given as swa_* (rotary = head_dim - qk_nope_head_dim)
    "dots3_note_text": {"swa_num_attention_heads": 2, "swa_num_key_value_heads": 2,
                        "swa_q_lora_rank": 16, "swa_kv_lora_rank": 32, "swa_head_dim": 16,
                        "swa_qk_nope_head_dim": 8, "swa_v_head_dim": 8},
}

# Types transformers cannot run as a small text model on their own, with the reason.
SKIPS: dict[str, str] = {
    "gemma4_assistant": "a draft model of Gemma 4: its forward takes the backbone's inputs_embeds "
                        "and shared_kv_states, never text alone",
}


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0][:160]


def sweep_root() -> Path:
    """Where the checkpoints are kept: per transformers version and per version of this file
    (a changed config builds again)."""
    import hashlib

    import transformers

    base = os.environ.get("ATTENTION_EXPLORER_SWEEP")
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:10]
    return Path(base) if base else (Path.home() / ".cache" / "attention-explorer" /
                                    f"sweep-{transformers.__version__}-{digest}")


def build(model_type: str, task: str, root: Path) -> Path:
    """The tiny checkpoint of ``model_type``, built once under ``root``.

    Raises:
        Skip: transformers cannot build it (the reason is kept beside it for the next run).
    """
    import torch

    from tests.helpers import byte_level_tokenizer

    path = root / model_type
    skipped = root / f"{model_type}.skip"
    if (path / "config.json").exists():
        return path
    if skipped.exists():
        raise Skip(skipped.read_text())
    tokenizer = byte_level_tokenizer()
    try:
        config = tiny_config(model_type, len(tokenizer), task)
        with _quiet(), torch.device("meta"):
            size = sum(p.numel() for p in auto_class(task).from_config(config).parameters())
        if size > MAX_PARAMETERS:
            raise Skip(f"the small config still has {size:,} parameters (a size it keeps in a "
                       f"field this sweep does not know)")
        torch.manual_seed(0)
        with _quiet():
            model = auto_class(task).from_config(config).eval()
    except Skip as reason:
        root.mkdir(parents=True, exist_ok=True)
        skipped.write_text(str(reason))
        raise
    except Exception as error:  # noqa: BLE001
        root.mkdir(parents=True, exist_ok=True)
        reason = f"transformers cannot build it: {type(error).__name__}: {_first_line(error)}"
        skipped.write_text(reason)
        raise Skip(reason) from None
    temporary = root / f".{model_type}.tmp"
    with _quiet():
        model.save_pretrained(temporary)
        tokenizer.save_pretrained(temporary)
    temporary.replace(path)
    return path


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


# Models whose eager ``output_attentions`` is the softmax *before* their per-head attention sink:
# their eager_attention_forward mixes the values with it and then scales the result by
# ``sigmoid(logsumexp(logits) - sink)``, so the weights the output is really mixed with are the
# returned ones times that factor (the sink takes the rest of each row, as gpt-oss's eager
# weights show it). The reference applies the model's own factor.
SINK_AFTER_SOFTMAX = {"granite_swa", "granitemoe_swa"}


@contextlib.contextmanager
def _sink_scaled(model_type: str):
    """While inside, ``model_type``'s eager weights come back times its sink factor."""
    import importlib

    import torch

    if model_type not in SINK_AFTER_SOFTMAX:
        yield
        return
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    original = module.eager_attention_forward

    def scaled(attention, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        output, weights = original(attention, query, key, value, attention_mask, scaling,
                                   dropout, **kwargs)
        keys = module.repeat_kv(key, attention.num_key_value_groups)
        logits = torch.matmul(query, keys.transpose(2, 3)) * scaling
        if attention_mask is not None:
            logits = logits + attention_mask
        factor = (torch.logsumexp(logits, dim=-1) - attention.sinks.view(1, -1, 1)).sigmoid()
        return output, weights * factor[..., None]

    module.eager_attention_forward = scaled
    try:
        yield
    finally:
        module.eager_attention_forward = original


# Longformer's (and LED's encoder's) eager weights are a band: "the attention weight of a token to
# itself is located at index attention_window / 2 and the attention_window / 2 preceding
# (succeeding) values are the attention weights to the attention_window / 2 preceding
# (succeeding) tokens" (transformers' LongformerBaseModelOutput). The reference lays them out as
# a [query, key] map with a plain loop over that description.
BANDED = {"longformer": "encoder.self", "led": "encoder.self"}


def _full_from_band(band):
    import torch

    n = band.shape[2]
    half = (band.shape[3] - 1) // 2
    full = torch.zeros((*band.shape[:3], n))
    for query in range(n):
        for column in range(band.shape[3]):
            key = query - half + column
            if 0 <= key < n:
                full[:, :, query, key] = band[:, :, query, column]
    return full


# LongT5's local attention returns [batch, block, head, L, 3 L]: block b's queries against the
# keys of blocks b - 1, b and b + 1 concatenated (transformers' _concatenate_3_blocks); the
# reference lays them out with a plain loop.
BLOCKED = {"longt5": "encoder.self"}


def _full_from_blocks(blocks, n):
    import torch

    batch, n_blocks, heads, length, width = blocks.shape
    full = torch.zeros((batch, heads, n, n))
    for block in range(n_blocks):
        for row in range(length):
            query = block * length + row
            for column in range(width):
                key = (block - 1) * length + column
                if query < n and 0 <= key < n:
                    full[:, :, query, key] = blocks[:, block, :, row, column]
    return full


# DeepSeek-V4's eager weights have a column per token and then one per compressed key (its
# attention appends them to the keys); the reference is the tokens' columns as they are, each
# row short of 1 by what the compressed keys (and its sinks) took.
KEYS_AFTER_TOKENS = {"deepseek_v4": "decoder.self"}


def eager_reference(path: Path, task: str, family: str, inputs: dict) -> dict[str, tuple]:
    """transformers' own eager ``output_attentions`` of the checkpoint at ``path`` on
    ``inputs``, per kind name of a trace of a model of ``family``."""
    import torch

    with _quiet():
        eager = auto_class(task).from_pretrained(path, attn_implementation="eager").eval()
        languages = list(getattr(eager.config, "languages", None) or [])
        if languages and hasattr(eager, "set_default_language"):  # X-MOD: English's adapter
            eager.set_default_language("en_XX" if "en_XX" in languages else languages[0])
        with torch.inference_mode(), _sink_scaled(eager.config.model_type):
            if getattr(eager.config, "attention_type", "") == "block_sparse":
                # BigBird turns block-sparse attention into full attention itself for inputs
                # this short (under 704 tokens); switched inside a pass, that pass and the later
                # ones return no weights, so the reference model is switched before
                switch = getattr(eager, "set_attention_type", None) or \
                    eager.get_encoder().set_attention_type
                switch("original_full")
            out = eager(**inputs, output_attentions=True, use_cache=False)
    if family == "encoder-decoder":
        maps = {"encoder.self": out.encoder_attentions, "decoder.self": out.decoder_attentions,
                "decoder.cross": out.cross_attentions}
    else:
        maps = {("encoder.self" if family == "encoder-only" else "decoder.self"): out.attentions}
    banded = BANDED.get(eager.config.model_type)
    if banded:
        maps[banded] = tuple(_full_from_band(band) for band in maps[banded])
    after = KEYS_AFTER_TOKENS.get(eager.config.model_type)
    if after:
        n = inputs["input_ids"].shape[1]
        maps[after] = tuple(m[..., :n] for m in maps[after])
    blocked = BLOCKED.get(eager.config.model_type)
    if blocked:
        n = inputs["input_ids"].shape[1]
        maps[blocked] = tuple(_full_from_blocks(blocks, n) for blocks in maps[blocked])
    return maps


def check(model_type: str, task: str, root: Path) -> Row:
    """Build, load, trace and compare one type."""

    from model import load
    from model.errors import ModelLoadError

    row = Row(model_type, task, "error")
    try:
        path = build(model_type, task, root)
    except Skip as reason:
        row.status, row.detail = "skipped", str(reason)
        return row
    targets = TARGETS if task == "seq2seq" else None
    step = "load"
    try:
        with _quiet():
            model = load(str(path), device="cpu")
            step = "trace"
            inputs = model.prepare_inputs(TEXTS, targets)
            traces = model.trace_batch(TEXTS, targets)
    except ModelLoadError as refusal:
        row.status, row.detail = "refused", str(refusal)
        return row
    except Exception as error:  # noqa: BLE001
        row.detail = f"{step}: {type(error).__name__}: {_first_line(error)}"
        return row
    try:
        reference = eager_reference(path, task, model.family.value, inputs)
    except Exception as error:  # noqa: BLE001
        row.detail = f"traced, but no eager reference: {type(error).__name__}: " \
                     f"{_first_line(error)}"  # unverified is not a pass
        return row
    reference = {k: v for k, v in reference.items() if v is not None and len(v) and all(
        a is not None for a in v)}
    if not reference:
        row.status, row.detail = "skipped", "transformers returns no eager attention"
        return row
    found = _compare(row, model, inputs, traces, reference)
    if found is None:
        return row
    worst, peak = found
    through = ""
    if worst > ATOL and model.route == "recorded":
        # the fused kernel's run may drift from eager's by rounding where layers run many
        # times (HRM's cycles); recorded through the eager kernel, the capture is compared on
        # the very hidden states the reference saw
        from model.hf.capture import ATTN_EAGER

        model.model.set_attn_implementation(ATTN_EAGER)
        with _quiet():
            again = _compare(row, model, inputs, model.trace_batch(TEXTS, targets), reference)
        if again is None:
            return row
        if again[0] <= ATOL:
            through = f"; SDPA's run drifts from eager's by {worst:.2g}"
            worst = again[0]
    if worst > ATOL:
        row.status, row.detail = "wrong", f"max |difference| {worst:.3g}"
        return row
    if peak < 2:  # every weight under twice the uniform one: equal maps would prove little
        row.detail = f"near-uniform weights (largest {peak:.2f} × uniform): not a test"
        return row
    row.status = "exact"
    row.detail = f"{traces[0].stack(next(iter(reference))).shape[0]} layers, " \
                 f"route {getattr(model, 'route', 'interface')}{through}"
    return row


def _compare(row: Row, model, inputs, traces, reference) -> tuple[float, float] | None:
    """``(largest difference, largest weight × keys)`` of ``traces`` against ``reference``
    over every sequence's real rows and keys; None (``row`` says why) where they cannot be
    compared."""
    import numpy as np
    import torch

    rows = {"encoder.self": ("attention_mask", "attention_mask"),
            "decoder.self": ("decoder_attention_mask", "decoder_attention_mask"),
            "decoder.cross": ("decoder_attention_mask", "attention_mask")}
    if model.family.value != "encoder-decoder":
        rows = {k: ("attention_mask", "attention_mask") for k in rows}
    worst = peak = 0.0
    for b, trace in enumerate(traces):
        if set(trace.names) != set(reference):
            row.status = "wrong"
            row.detail = f"kinds {sorted(trace.names)}, eager {sorted(reference)}"
            return None
        for name, layers in reference.items():
            q_real = inputs[rows[name][0]][b].bool().cpu()
            k_real = inputs[rows[name][1]][b].bool().cpu()
            try:
                expected = torch.stack([a.float() for a in layers])[:, b][:, :, q_real][
                    :, :, :, k_real].numpy()
            except (RuntimeError, IndexError) as error:
                row.status = "wrong"
                row.detail = f"{name}: eager shapes {[tuple(a.shape) for a in layers][:2]} " \
                             f"({_first_line(error)})"
                return None
            got = trace.stack(name)
            if got.shape != expected.shape:
                row.status = "wrong"
                row.detail = f"{name}: shape {got.shape}, eager {expected.shape}"
                return None
            worst = max(worst, float(np.abs(got - expected).max()))
            peak = max(peak, float(got.max(initial=0.0)) * got.shape[-1])
    return worst, peak


def sweep(types: list[str] | None = None, root: Path | None = None, progress=None) -> list[Row]:
    """The rows of ``types`` (default every type of :func:`model_types`)."""
    root = root or sweep_root()
    every = model_types()
    rows = []
    for name in types or list(every):
        try:
            rows.append(check(name, every[name], root))
        except Exception:  # noqa: BLE001 - a harness failure is the row's detail
            rows.append(Row(name, every[name], "error",
                            "harness: " + traceback.format_exc().splitlines()[-1][:200]))
        if progress:
            progress(rows[-1])
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a text table, then the count of each status."""
    lines = [f"{r.model_type:28} {r.task:8} {r.status:8} {r.detail}" for r in rows]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append(" · ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
                 f" · {len(rows)} types")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from tqdm import tqdm

    names = [a for a in argv if not a.startswith("-")] or None
    bar = tqdm(total=len(names or model_types()), file=sys.stderr, unit="type")

    def progress(row: Row) -> None:
        bar.set_postfix_str(f"{row.model_type}: {row.status}")
        bar.update()

    rows = sweep(names, progress=progress)
    bar.close()
    print(table(rows))
    if "--json" in argv:
        print(json.dumps([vars(r) for r in rows]))
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
