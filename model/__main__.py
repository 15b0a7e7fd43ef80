"""Command line: ``python -m model export --model SPEC --text "..." --out FILE.npz`` (one
text's attention) and ``python -m model corpus --model SPEC --input FILE --out FILE.parquet``
(head statistics over many sentences, here or on a Ray cluster)."""

from __future__ import annotations

import argparse
import sys

from i18n import _

EXPORT_HELP = """\
Run a model on a text, capture every attention pattern and write them as .npz.

The file holds `tokens` and `ids` (single-stack models) or `source_tokens`, `source_ids`,
`target_tokens`, `target_ids` (encoder-decoder); one float32 array [layer, head, query, key]
per attention kind (`encoder.self`, `decoder.self`, `decoder.cross`), grouped-query heads
expanded to the query heads; and `meta`, a JSON string (model, family, n_layers, n_heads,
n_kv_heads, ...). Load it with numpy.load(FILE).
"""


DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")
DTYPE_HELP = ("the precision of the model's weights: auto (bfloat16 on a CUDA GPU that supports "
              "it, float16 on older ones, float32 on the CPU), float32, bfloat16 or float16 "
              "(default: auto); attention weights are computed in float32 whatever it is")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one ``error: ...`` line (and exit status 2)."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1 (workers, a batch's size)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            _("{value} is not a whole number").format(value=repr(text))) from None
    if value < 1:
        raise argparse.ArgumentTypeError(
            _("must be at least 1, not {value}").format(value=value))
    return value


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
    export.add_argument("--out", required=True, metavar="FILE.npz",
                        help="where to write (its folder must exist; an existing file is "
                             "refused unless --force)")
    export.add_argument("--force", action="store_true",
                        help="overwrite --out when it exists")
    export.add_argument(
        "--device", default="auto",
        help="auto (CUDA when present, else CPU), cpu or cuda (default: auto)")
    export.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto", help=DTYPE_HELP)
    export.add_argument(
        "--moves", nargs="?", const="norm,value_zeroing,rollout", default=None,
        metavar="METHODS",
        help="also write What moves' arrays beside the weights (comma-separated: norm, "
             "value_zeroing, rollout; alone: all three); texts of up to 128 tokens")
    export.add_argument(
        "--debug", action="store_true",
        help="on an unexpected error, show the whole traceback instead of one line")
    corpus = commands.add_parser(
        "corpus", help="head statistics of every sentence of a file, to .parquet or .csv",
        description=CORPUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus.add_argument("--model", required=True, metavar="SPEC",
                        help="as for export: a bundled model, a hub id, a folder or a .gguf")
    corpus.add_argument("--input", required=True, metavar="FILE",
                        help="sentences: .txt or .md (one per line), .csv or .tsv (with a "
                             "header row), .jsonl (one object per line)")
    corpus.add_argument("--column", default=None, metavar="NAME",
                        help="the column (.csv, .tsv) or field (.jsonl) holding the sentences "
                             "(default: sentence or text when there is one, else the first)")
    corpus.add_argument("--out", required=True, metavar="FILE.parquet|FILE.csv",
                        help="where to write the table (its folder must exist; an existing "
                             "file is refused unless --force)")
    corpus.add_argument("--force", action="store_true",
                        help="overwrite --out when it exists")
    corpus.add_argument("--queries", default=None, metavar="PATTERN",
                        help="span attention: the query tokens (a regular expression matched "
                             "against whole tokens, e.g. 'it')")
    corpus.add_argument("--keys", default=None, metavar="PATTERN",
                        help="span attention: the key tokens (e.g. 'cat|dog|mat')")
    corpus.add_argument("--keys-before", action="store_true",
                        help="span attention: only keys before each query")
    corpus.add_argument("--batch-size", type=_positive, default=32, metavar="N",
                        help="sentences run together (default 32)")
    corpus.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local: this process (default); ray: a Ray cluster through Ray "
                             "Data, each worker loading the model once")
    corpus.add_argument("--address", default=None, metavar="ADDR",
                        help="the Ray cluster, e.g. ray://HOST:10001 or HOST:6379 (default: "
                             "RAY_ADDRESS, else a local cluster started for the run)")
    corpus.add_argument("--workers", type=_positive, default=None, metavar="N",
                        help="Ray workers, each holding the model (default: one per GPU, "
                             "else one per two CPUs)")
    corpus.add_argument("--device", default="auto",
                        help="auto (CUDA when present, else CPU), cpu or cuda (default: auto)")
    corpus.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto", help=DTYPE_HELP)
    corpus.add_argument("--debug", action="store_true",
                        help="on an unexpected error, show the whole traceback")
    return parser


CORPUS_HELP = """\
Run a model on every sentence of a file, in padded batches, and write one row per sentence ×
attention kind × layer × head: sentence (from 0), text, kind, layer, head, queries (its real
query tokens), and the head statistics of the app's Head statistics page (entropy, distance,
first_token, previous_token, self; NaN where they do not apply); with --queries and --keys,
also span (the weight the matching queries put on the matching keys, averaged over those
queries). Padding never enters a number. Sentences the model cannot read are left out with a
warning.

On a Ray cluster (--engine ray) the same batches run on a pool of workers through Ray Data,
each loading the model once (on a GPU where the cluster has them); the table is the same.
  local cluster:     ray start --head   (then --address auto), or no --address at all
  existing cluster:  --address ray://HOST:10001, or set RAY_ADDRESS
"""


def _one_line(error: BaseException) -> str:
    """The message of ``error`` on one line (its type's name when it has none)."""
    return " ".join(str(error).split()) or type(error).__name__


def _check_out(out: str, *, force: bool, endings: tuple[str, ...] = ()):
    """The path ``--out`` names, once it is known that it can be written: checked before a
    model loads, so that nothing runs for a file that would fail at the end.

    Raises:
        ValueError: another ending than ``endings`` (when given), a folder, a folder that does
            not exist, an existing file without ``force``, or a place that cannot be written.
    """
    from pathlib import Path

    path = Path(out)
    if endings and path.suffix.lower() not in endings:
        raise ValueError(_("--out must end in {endings}: {path}").format(
            endings=" or ".join(endings), path=out))
    if path.is_dir():
        raise ValueError(_("--out {path} is a folder: name a file").format(path=out))
    folder = path.parent
    if not folder.is_dir():
        message = (_("the folder {folder} of --out {path} is not a folder") if folder.exists()
                   else _("the folder {folder} of --out {path} does not exist"))
        raise ValueError(message.format(folder=str(folder), path=out))
    exists = path.exists()
    if exists and not force:
        raise ValueError(_("--out {path} already exists: name another file, or add --force to "
                           "overwrite it").format(path=out))
    try:  # the one sure test: open it (an existing file is left as it is)
        with path.open("ab" if exists else "xb"):
            pass
        if not exists:
            path.unlink()
    except OSError as error:
        raise ValueError(_("cannot write --out {path}: {reason}").format(
            path=out, reason=error.strerror or _one_line(error))) from None
    return path


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
        return _corpus(args) if args.command == "corpus" else _export(args)
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
    from model import load  # imported late so that --help stays fast
    from model.device import resolve_device
    from model.meta import Family

    spec = args.model.strip()
    if not spec:
        raise ValueError("--model is empty: name a bundled model, a hub id, a folder or a .gguf")
    _check_out(args.out, force=args.force)
    device = args.device.strip()
    resolve_device(device)  # an unknown device: a ValueError that says so, before loading
    model = load(spec, device=device, dtype=args.dtype)
    if args.target is not None and model.family is not Family.ENCODER_DECODER:
        raise ValueError(f"--target applies to encoder-decoder models; {spec} is {model.family}")
    if args.moves is not None:
        from model.analysis.moves import with_extras

        methods = tuple(m.strip() for m in args.moves.split(",") if m.strip())
        trace = with_extras(model, args.text, args.target, methods)
    else:
        trace = model.trace(args.text, target=args.target)
    path = trace.save(args.out)
    shapes = ", ".join(f"{n} {tuple(trace.attention[n].shape)}" for n in trace.names)
    extras = "".join(f", {key} {tuple(a.shape)}" for key, a in trace.extras.items())
    print(f"wrote {path}: {trace.family}, {shapes}{extras}")
    return 0


def _corpus(args: argparse.Namespace) -> int:
    """``python -m model corpus``: read the sentences, run them, write the table."""
    from pathlib import Path

    from tqdm import tqdm

    from model.corpus.engine import check_address, default_address, run_corpus, write_table
    from model.corpus.sentences import UNLIMITED, read_sentences
    from model.corpus.statistics import Span
    from model.device import resolve_device

    spec = args.model.strip()
    if not spec:
        raise ValueError("--model is empty: name a bundled model, a hub id, a folder or a .gguf")
    _check_out(args.out, force=args.force, endings=(".parquet", ".csv"))
    if (args.queries is None) != (args.keys is None):
        raise ValueError("span attention needs both --queries and --keys")
    span = None if args.queries is None else Span(args.queries, args.keys, args.keys_before)
    resolve_device(args.device.strip())
    address = args.address or default_address()
    if args.engine == "ray":
        check_address(address)  # one line within seconds, not Ray's minutes of retries
    path = Path(args.input)
    read = read_sentences(path.name, path.read_bytes(), args.column, UNLIMITED)
    if read.dropped:
        print(f"warning: {read.dropped} rows of {path.name} have no text in that column; "
              f"left out", file=sys.stderr)
    sentences = read.sentences
    bars: list = []  # opened once the run starts: a failure before it is one line alone

    def progress(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, unit="sentence", file=sys.stderr))
        bars[0].update(done - bars[0].n)

    try:
        frame = run_corpus(spec, sentences, engine=args.engine, address=address,
                           device=args.device.strip(), dtype=args.dtype,
                           batch_size=args.batch_size, span=span,
                           progress=progress, workers=args.workers)
    finally:
        for bar in bars:
            bar.close()
    for index, message in frame.attrs["skipped"]:
        print(f"warning: sentence {index + 1} left out: {_one_line(Exception(message))}",
              file=sys.stderr)
    written = write_table(frame, args.out)
    print(f"wrote {written}: {frame['sentence'].nunique()} sentences, {len(frame)} rows "
          f"({args.engine} engine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
