"""Reading a transformers config: the one place that knows its field names.

Configs name the same fact differently (``hidden_size`` / ``d_model`` / ``n_embd``, ``d_kv`` /
``head_dim``, ``intermediate_size`` / ``d_ff`` / ``encoder_ffn_dim`` / ``n_inner``, layer counts
per stack). transformers' ``attribute_map`` already answers ``hidden_size``,
``num_attention_heads`` and ``num_hidden_layers`` for most; what it does not cover is read here,
into :class:`~model.meta.ModelDims`, :class:`~model.meta.PositionInfo` and a
:class:`~model.meta.Family`.
"""

from __future__ import annotations

from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
)

from i18n import _
from model.errors import ModelLoadError
from model.meta import Family, ModelDims, PositionInfo

ENCODERS = {"bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2",
            "xlm-roberta", "mpnet", "camembert", "modernbert"}
RELATIVE_BIAS = ("t5", "mt5", "longt5", "umt5")
SINUSOIDAL = ("marian", "m2m_100", "nllb-moe")


def first_set(config, *names: str):
    """The first of ``names`` the config sets to something other than None (else None); a size
    that differs between layers (Gemma 4's per-layer configs, Gemma 3n's per-layer lists) is read
    as its largest."""
    for name in names:
        try:
            value = getattr(config, name, None)
        except RuntimeError:  # transformers: a per-layer attribute read from the global config
            value = [getattr(layer, name, None) for layer in config.per_layer_config]
        if isinstance(value, (list, tuple)):
            value = max((v for v in value if isinstance(v, (int, float))), default=None)
        if value is not None:
            return value
    return None


def detect_family(config) -> Family:
    """Encoder-only, decoder-only or encoder-decoder, from a transformers config."""
    if getattr(config, "is_encoder_decoder", False):
        return Family.ENCODER_DECODER
    architectures = getattr(config, "architectures", None) or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        return Family.DECODER_ONLY
    if architectures:
        return Family.ENCODER_ONLY
    if getattr(config, "is_decoder", False):
        return Family.DECODER_ONLY
    if config.model_type in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return Family.ENCODER_DECODER
    if config.model_type not in ENCODERS and config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return Family.DECODER_ONLY
    return Family.ENCODER_ONLY


def auto_class(family: Family):
    """The transformers Auto class that loads a model of ``family`` with its head."""
    return {Family.ENCODER_ONLY: AutoModel, Family.DECODER_ONLY: AutoModelForCausalLM,
            Family.ENCODER_DECODER: AutoModelForSeq2SeqLM}[family]


def positional_scheme(config) -> str:
    """How the model encodes positions (for labels and the positional-encoding views)."""
    if config.model_type in RELATIVE_BIAS:
        return "relative bias"
    if getattr(config, "rope_theta", None) or getattr(config, "rope_parameters", None):
        return "rope"
    if config.model_type in SINUSOIDAL:
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


def read_positions(config) -> PositionInfo:
    """The positional scheme with its base, the longest input and any sliding window."""
    window = first_set(config, "sliding_window")
    if getattr(config, "use_sliding_window", True) is False:
        window = None
    limit = first_set(config, "max_position_embeddings")
    return PositionInfo(positional_scheme(config), rope_theta=rope_theta(config),
                        max_positions=int(limit) if limit and limit > 0 else None,  # XLNet: -1
                        sliding_window=int(window) if window else None)


# Configs that join two separately trained checkpoints (transformers' EncoderDecoderModel).
JOINED = ("encoder-decoder", "speech-encoder-decoder", "vision-encoder-decoder")


def _joined_dims(config) -> ModelDims:
    """The sizes of an encoder-decoder whose config holds one config per stack (T5Gemma): the
    encoder's, with the decoder's layer count.

    Raises:
        ModelLoadError: it joins two other checkpoints (an EncoderDecoderModel), or its stacks
            differ in width or heads.
    """
    if config.model_type in JOINED:
        raise ModelLoadError(_("the {model_type} config joins two other checkpoints' configs "
                               "(an EncoderDecoderModel): load a single checkpoint").format(
                                   model_type=config.model_type))
    encoder = read_dims(config.encoder, Family.ENCODER_ONLY)
    decoder = read_dims(config.decoder, Family.DECODER_ONLY)
    if (encoder.d_model, encoder.n_heads, encoder.d_head) != (
            decoder.d_model, decoder.n_heads, decoder.d_head):
        raise ModelLoadError(_("the {model_type} config's encoder and decoder differ in width or "
                               "heads: not supported").format(model_type=config.model_type))
    return ModelDims(d_model=encoder.d_model, n_heads=encoder.n_heads,
                     n_kv_heads=encoder.n_kv_heads, d_head=encoder.d_head, d_ff=encoder.d_ff,
                     n_encoder_layers=encoder.n_encoder_layers,
                     n_decoder_layers=decoder.n_decoder_layers)


def read_dims(config, family: Family) -> ModelDims:
    """d_model, heads, K/V heads, d_head, d_ff and the layers of each stack.

    Raises:
        ModelLoadError: the config lacks the width or the head count, or holds no layers.
    """
    if hasattr(config, "encoder") and hasattr(config, "decoder") and \
            hasattr(config.encoder, "model_type"):
        return _joined_dims(config)
    d_model = first_set(config, "hidden_size", "d_model", "n_embd")
    n_heads = first_set(config, "num_attention_heads", "n_head", "num_heads")
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if not n_heads and text is not config:
        raise ModelLoadError(_("the {model_type} config is of a multimodal model: its text model "
                               "({text_type}) sits beside a vision or audio tower, and this app "
                               "reads text-only checkpoints; load the text model on its "
                               "own").format(model_type=config.model_type,
                                             text_type=text.model_type))
    parts = [name for name, value in vars(config).items()
             if hasattr(value, "model_type") and first_set(value, "num_attention_heads", "n_head",
                                                         "num_heads")]
    if not n_heads and parts:
        raise ModelLoadError(_("the {model_type} config keeps its attention heads in the "
                               "configs of its parts ({parts}): a model of several Transformers "
                               "this app does not read").format(
                                   model_type=config.model_type, parts=", ".join(parts)))
    if not n_heads:
        raise ModelLoadError(_("the {model_type} config names no attention heads: its layers mix "
                               "tokens without attention weights (state-space, recurrent or "
                               "Fourier layers), so there is no attention to show").format(
                                   model_type=config.model_type))
    if not d_model:
        raise ModelLoadError(_("the {model_type} config names no model width: not a Transformer "
                               "this app can read").format(model_type=config.model_type))
    d_head = first_set(config, "head_dim", "d_kv") or d_model // n_heads
    d_ff = first_set(config, "intermediate_size", "d_ff", "encoder_ffn_dim", "n_inner",
                  "ffn_dim") or 4 * d_model
    n_kv_heads = first_set(config, "num_key_value_heads") or n_heads
    layers = first_set(config, "num_hidden_layers", "num_layers", "n_layer") or 0
    if family is Family.ENCODER_DECODER:
        encoder = first_set(config, "encoder_layers", "num_layers") or layers
        decoder = first_set(config, "decoder_layers", "num_decoder_layers") or encoder
    elif family is Family.ENCODER_ONLY:
        encoder, decoder = layers, 0
    else:
        encoder, decoder = 0, layers
    if encoder + decoder < 1:
        raise ModelLoadError(_("the {model_type} config has no layers (num_hidden_layers = "
                               "{layers}): there is no attention to show").format(
                                   model_type=config.model_type, layers=layers))
    try:
        return ModelDims(d_model=int(d_model), n_heads=int(n_heads), n_kv_heads=int(n_kv_heads),
                         d_head=int(d_head), d_ff=int(d_ff), n_encoder_layers=int(encoder),
                         n_decoder_layers=int(decoder))
    except ValueError as error:
        raise ModelLoadError(_("the {model_type} config is inconsistent: {error}").format(
            model_type=config.model_type, error=error)) from None
