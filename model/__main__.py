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


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``error: ...`` line (and exit status 2)."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m model", description="Attention Explorer models.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
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
    export.add_argument(
        "--debug", action="store_true",
        help="on an unexpected error, show the whole traceback instead of one line")
    return parser


def _one_line(error: BaseException) -> str:
    """The message of ``error`` on one line (its type's name when it has none)."""
    return " ".join(str(error).split()) or type(error).__name__


def _fail(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status.

    0: written. 2: bad arguments or an expected failure (a model that cannot be loaded, text it
    cannot read, a file that cannot be written), one ``error:`` line on stderr. 1: an
    unexpected error, one line (``--debug`` shows the traceback). 130: interrupted.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2, already printed)
        return done.code if isinstance(done.code, int) else 2
    try:
        return _export(args)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except (ValueError, OSError) as error:  # ModelLoadError and UnknownWordsError included
        return _fail(_one_line(error), 2)
    except Exception as error:
        if args.debug:
            raise
        return _fail(f"unexpected {type(error).__name__}: {_one_line(error)} (run again with "
                     f"--debug to see the traceback)", 1)


def _export(args: argparse.Namespace) -> int:
    """``python -m model export``: load, trace, save, and say what was written."""
    from . import load  # imported late so that --help stays fast
    from .device import resolve_device
    from .facts import Family

    spec = args.model.strip()
    if not spec:
        raise ValueError("--model is empty: name a bundled model, a hub id, a folder or a .gguf")
    device = args.device.strip()
    resolve_device(device)  # an unknown device: a ValueError that says so, before loading
    model = load(spec, device=device)
    if args.target is not None and model.family is not Family.ENCODER_DECODER:
        raise ValueError(f"--target applies to encoder-decoder models; {spec} is {model.family}")
    trace = model.trace(args.text, target=args.target)
    path = trace.save(args.out)
    shapes = ", ".join(f"{n} {tuple(trace.attention[n].shape)}" for n in trace.names)
    print(f"wrote {path}: {trace.family}, {shapes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
