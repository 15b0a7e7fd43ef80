"""Command line: ``python -m model export --model SPEC --text "..." --out FILE.npz``."""

from __future__ import annotations

import argparse
import sys

EXPORT_HELP = """\
Run a model on a text, capture every attention pattern and write them as .npz.

The file holds `tokens` and `ids` (single-stack models) or `source_tokens`, `source_ids`,
`target_tokens`, `target_ids` (encoder-decoder); one float32 array [layer, head, query, key]
per attention kind (`encoder.self`, `decoder.self`, `decoder.cross`), grouped-query heads
expanded to the query heads; and `meta`, a JSON string (model, family, n_layers, n_heads,
n_kv_heads, ...). Load it with numpy.load(FILE).
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m model",
                                     description="Attention Explorer models.")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser(
        "export", help="write a model's attention on a text to .npz",
        description=EXPORT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument(
        "--model", required=True, metavar="SPEC",
        help="a bundled model (own-random), a Hugging Face hub id, a local checkpoint "
             "directory or a .gguf file")
    export.add_argument(
        "--text", required=True,
        help="the input: the whole prompt for single-stack models, the source sentence for "
             "encoder-decoder models")
    export.add_argument(
        "--target", default=None,
        help="encoder-decoder only: teacher-forced target text. Without it the model's own "
             "output is traced (own-random: the source words, shifted right after <bos>)")
    export.add_argument("--out", required=True, metavar="FILE.npz", help="where to write")
    export.add_argument(
        "--device", default="auto",
        help="auto (CUDA when present, else CPU), cpu or cuda (default: auto)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    from . import load  # imported late so that --help stays fast
    from .facts import Family

    try:
        model = load(args.model, device=args.device)
        if args.target is not None and model.family is not Family.ENCODER_DECODER:
            raise ValueError(f"--target applies to encoder-decoder models; {args.model} is "
                             f"{model.family}")
        trace = model.trace(args.text, target=args.target)
        path = trace.save(args.out)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    shapes = ", ".join(f"{n} {tuple(trace.attention[n].shape)}" for n in trace.names)
    print(f"wrote {path}: {trace.family}, {shapes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
