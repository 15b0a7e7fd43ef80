"""Tiny random Hugging Face checkpoints built offline (from_config + save_pretrained)."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

CORPUS = ["The cat sat on the mat.", "The cat chased the mouse because it was hungry.",
          "A dog slept under the table yesterday.", "猫 坐 在 垫子 上", "emoji 😀 and café"]
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def byte_level_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer (GPT-2 style) trained on a few sentences."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def _configs(vocab: int) -> dict:
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    small = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=128, **ids)
    return {
        "bert": (BertModel, BertConfig(**small)),
        "gpt2": (GPT2LMHeadModel, GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4,
                                             n_positions=128, **ids)),
        "llama": (LlamaForCausalLM, LlamaConfig(**small, num_key_value_heads=2)),
        "mistral": (MistralForCausalLM, MistralConfig(**small, num_key_value_heads=2,
                                                      sliding_window=4)),
        "t5": (T5ForConditionalGeneration, T5Config(
            vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
            num_heads=4, relative_attention_num_buckets=8, decoder_start_token_id=0, **ids)),
        "bart": (BartForConditionalGeneration, BartConfig(
            vocab_size=vocab, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=128, decoder_start_token_id=2, **ids)),
    }


def build_tiny_checkpoints(root: Path) -> dict[str, Path]:
    """Save one tiny random checkpoint per family member under ``root``; return their paths."""
    tokenizer = byte_level_tokenizer()
    paths = {}
    for name, (model_class, config) in _configs(len(tokenizer)).items():
        torch.manual_seed(0)
        model = model_class(config).eval()
        path = root / name
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[name] = path
    return paths
