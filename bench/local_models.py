"""Checkpoints built here, for benchmarks and tests that need a model no hub may be asked for:
a random Llama-family decoder with a position table as long as asked (32k tokens), saved with
``save_pretrained`` beside a byte-level tokenizer.

    .venv/bin/python -m bench.local_models OUT_DIR [--positions 32768] [--layers 2] ...
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def random_llama(path: Path | str, *, positions: int = 32768, layers: int = 2, heads: int = 4,
                 kv_heads: int = 2, d_model: int = 64, d_ff: int = 128, dtype: str = "float32",
                 seed: int = 0, device: str = "cpu") -> Path:
    """Save a random ``LlamaForCausalLM`` (grouped-query attention, RoPE, ``positions`` in its
    config) and a byte-level tokenizer under ``path``; return ``path``. Built once: an existing
    checkpoint with the same config is reused. The weights are made on ``device`` in ``dtype``
    directly (a 1B-parameter config in bfloat16 on ``"cuda"`` takes seconds, not minutes)."""
    import sys

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    sys.path.insert(0, str(ROOT))
    from tests.helpers import byte_level_tokenizer

    path = Path(path)
    tokenizer = byte_level_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=d_model, intermediate_size=d_ff,
                         num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, max_position_embeddings=positions,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2,
                         dtype=dtype)
    if (path / "config.json").exists() and (path / "tokenizer.json").exists():  # saved last
        saved = LlamaConfig.from_pretrained(path).to_diff_dict()
        saved.pop("architectures", None)  # written by save_pretrained, not part of the config
        if saved == config.to_diff_dict():
            return path
    torch.manual_seed(seed)
    with torch.device(device):  # made where it runs, in its dtype: never a float32 copy first
        model = LlamaForCausalLM._from_config(config, dtype=getattr(torch, dtype)).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--positions", type=int, default=32768)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--d-ff", type=int, default=128)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu", help="where the weights are made")
    args = parser.parse_args()
    print(random_llama(args.out, positions=args.positions, layers=args.layers, heads=args.heads,
                       kv_heads=args.kv_heads, d_model=args.d_model, d_ff=args.d_ff,
                       dtype=args.dtype, device=args.device))


if __name__ == "__main__":
    main()
