"""Sidebar settings shared by every page, kept in ``st.session_state``; the shared load of a run;
the one way a page explains an expected error."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import plotly.graph_objects as go
import streamlit as st

import model
from app_pages import widgets
from model import AttentionTrace, Family, LoadedModel, UnknownWordsError
from model.analysis.tokens import token_notes
from model.budget import check_analysis, token_budget
from model.errors import listed
from viz import export

DEFAULT_MODEL = "own-translator"
DEFAULT_TEXT = "The cat sat on the mat"
DEVICES = ("auto", "cpu", "cuda")
OTHER = "other…"
MODEL_HELP = {
    "own-translator": "the lesson's encoder-decoder, trained to translate a small English "
                      "vocabulary into Chinese (The cat sat on the mat → 猫 坐 在 垫子 上)",
    "own-random": "the lesson's full-size encoder-decoder (512 wide, 8 heads, 6 + 6 layers) "
                  "with random weights; its vocabulary is built from your text",
    "minilm": "all-MiniLM-L6-v2: a pretrained 6-layer BERT encoder (12 heads) for any English "
              "text",
    "smollm2": "SmolLM2-135M-Instruct: a pretrained 30-layer Llama decoder, 9 query / 3 "
               "key-value heads, for any text",
    OTHER: "a Hugging Face hub id (needs network) or a local checkpoint folder or .gguf file",
}
# Models whose weights were never trained: their attention shows structure, not meaning.
RANDOM_WEIGHTS = ("own-random",)
KIND_LABELS = {
    "encoder.self": "encoder self-attention",
    "decoder.self": "decoder masked self-attention",
    "decoder.cross": "decoder cross-attention (target → source)",
}


MAX_UPLOAD_MB = 1  # also server.maxUploadSize in .streamlit/config.toml


MARKDOWN_SPECIAL = re.compile(r"[!-/:-@\[-`{-~]")  # every ASCII punctuation mark
# What GitHub-flavoured markdown turns into a link even when every mark is escaped.
AUTOLINKS = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"  # invisible, and no link runs across it


def literal(text: str) -> str:
    """``text`` shown as it is in Streamlit's markdown: every ASCII punctuation mark written as
    a character reference (``&#58;``), and an invisible word joiner inside ``://``, ``www.``
    and after ``@``, so that a user's file name, model path or words never become links,
    images or formatting. (Escapes alone are not enough: ``https\\://x`` still becomes a
    link.)"""
    text = AUTOLINKS.sub(WORD_JOINER, str(text))
    return MARKDOWN_SPECIAL.sub(lambda match: f"&#{ord(match.group())};", text)


SHARED_KEYS = ("model_choice", "model_other", "device", "text", "target")


def sidebar(with_text: bool = True) -> None:
    """Draw the shared sidebar: model, device and (for the analysis pages) the text."""
    # Streamlit forgets a widget's value after a run that does not draw it (the Translate and
    # Positions pages hide the text). Writing the values back makes them plain session state,
    # which lasts until the widget is drawn again.
    for key in SHARED_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    from app_pages.cache import limits, policy

    with st.sidebar:
        choices = (DEFAULT_MODEL, *(m for m in model.BUNDLED if m != DEFAULT_MODEL))
        choices += (OTHER,) if policy().other else ()
        choice = widgets.selectbox(
            "Model", choices, key="model_choice",
            help="\n".join(f"- **{c}**: {h}" for c, h in MODEL_HELP.items() if c in choices))
        st.caption(MODEL_HELP[choice])
        if choice == OTHER:
            st.text_input("Hub id or local path", key="model_other", max_chars=model.MAX_SPEC,
                          placeholder="e.g. gpt2, ./my-checkpoint, ~/models/tiny.gguf")
        if with_text:
            uploaded = st.session_state.get("upload") is not None
            st.text_area("Text", DEFAULT_TEXT, key="text", height=100, disabled=uploaded,
                         max_chars=limits().max_chars,
                         help="Type or paste text (Ctrl+Enter to apply); it is tokenised as the "
                              "model does. While a file is loaded, the file is analysed "
                              "instead.")
            st.file_uploader("…or upload a text file", type=["txt", "md"], key="upload",
                             max_upload_size=MAX_UPLOAD_MB,
                             help="UTF-8, or GB18030/GBK as Chinese Windows saves it. While a "
                                  "file is loaded it replaces the box above; remove it (×) to "
                                  "type again.")
            st.text_input("Target text (encoder-decoder models, optional)", key="target",
                          max_chars=limits().max_chars,
                          placeholder="e.g. 猫 坐 在 垫子 上",
                          help="The output the decoder is fed word by word (teacher forcing). "
                               "Leave it empty to trace the model's own output. For "
                               "own-translator: Chinese words separated by spaces.")
        widgets.radio("Device", DEVICES, key="device", horizontal=True,
                      help="auto runs on CUDA when this machine has a GPU, else on the CPU.")


def settings() -> tuple[str, str]:
    """The chosen ``(model spec, device)``; the spec is empty until an 'other' one is typed."""
    choice = st.session_state.get("model_choice", DEFAULT_MODEL)
    spec = str(st.session_state.get("model_other", "")).strip() if choice == OTHER else choice
    return spec, st.session_state.get("device", "auto")


def decode_upload(data: bytes, name: str = "the file") -> tuple[str, str]:
    """Text of an uploaded file and the encoding it was read in: UTF-8 (a byte-order mark is
    dropped), else GB18030 (which covers GBK and GB2312, common for Chinese text saved on
    Windows), else a clear error."""
    try:
        return data.decode("utf-8-sig"), "UTF-8"
    except UnicodeDecodeError as error:
        position = error.start
    try:
        return data.decode("gb18030"), "GB18030"
    except UnicodeDecodeError:
        raise ValueError(f"{name} is neither UTF-8 nor GB18030/GBK text (byte {position} cannot "
                         f"be read); save it as UTF-8 and upload it again") from None


def current_text(max_chars: int | None = None) -> tuple[str, str | None]:
    """The text to analyse and, for an uploaded file, the encoding it was read in (else
    None): an uploaded file's text, else the text box's.

    Raises:
        ValueError: the file cannot be read, or the text is longer than ``max_chars``.
    """
    upload = st.session_state.get("upload")
    if upload is not None:
        text, encoding = decode_upload(upload.getvalue(), upload.name)
    else:
        text, encoding = str(st.session_state.get("text", DEFAULT_TEXT)), None
    return within(text, max_chars, "the file" if upload is not None else "the text"), encoding


def within(text: str, max_chars: int | None, what: str) -> str:
    """``text``, refused (``ValueError``) when longer than ``max_chars``."""
    if max_chars is not None and len(text) > max_chars:
        raise ValueError(f"{what} has {len(text):,} characters; this server reads at most "
                         f"{max_chars:,}. Shorten it.")
    return text


# Where to go when a model has no token for part of a text.
READS_ANY_SCRIPT = ("smollm2 reads any language and script, byte by byte (Chinese included): "
                    "choose it in the sidebar.")
# What the own models with a fixed vocabulary read, for messages about unknown words.
READS = {"own-translator": ("English words", "The cat sat on the mat",
                            "Chinese words separated by spaces", "猫 坐 在 垫子 上")}


def describe_error(spec: str, vocabulary_above: bool = False) -> Callable[[ValueError], str]:
    """A message for an expected error of ``spec``: unknown words say which text held them,
    what the model reads and an example; anything else is the error's own text.

    Args:
        vocabulary_above: the page lists the model's vocabulary itself (Translate), instead of
            pointing to the Translate page and the sidebar's other models.
    """

    def describe(error: ValueError) -> str:
        if not isinstance(error, UnknownWordsError):
            return str(error)
        words = listed(error.words, lambda word: f"“{word}”")
        source, source_example, target, target_example = READS.get(
            spec, ("words of its vocabulary", "", "words of its vocabulary", ""))
        if error.side == "target":
            return (f"The target text holds words {spec} does not know: {words}. It writes "
                    f"{target}, for example “{target_example}”. Nothing was dropped.")
        example = f", for example “{source_example}”" if source_example else ""
        if vocabulary_above:
            return (f"{spec} does not know: {words}. Nothing was dropped: replace them with "
                    f"words from the vocabulary above (it reads {source}{example}).")
        return (f"{spec} does not know: {words}. It reads {source}{example}; the Translate "
                f"page lists its vocabulary. Nothing was dropped. For any text, choose minilm "
                f"or smollm2 in the sidebar.")

    return describe


def show_token_notes(run: Run) -> None:
    """Warn where the tokenizer lost ([UNK]) or split (byte pieces) part of the input."""
    for note in token_notes(run.trace):
        examples = " ".join(note.examples) + (" …" if note.count > len(note.examples) else "")
        spec = run.key.spec
        if note.kind == "unknown":
            st.warning(literal(
                f"{note.count} of {note.total} tokens are [UNK]: {spec} has no token for "
                f"{examples or 'part of the text'}. Attention to an [UNK] says nothing about the "
                f"text it replaced; this model's vocabulary does not cover it (it may have been "
                f"trained on another language or script). {READS_ANY_SCRIPT}"))
        else:
            st.info(literal(
                f"{note.count} characters ({examples}) are split over several tokens, labelled "
                f"like {note.label}: {spec} reads them as bytes, so one character's attention is "
                f"spread over its pieces."))


class RunKey(NamedTuple):
    """What a trace was computed from: the key of every cached result derived from it."""

    spec: str
    device: str
    text: str
    target: str | None


@dataclass(frozen=True)
class Run:
    """One traced input: its cache key, the loaded model (its interface) and the trace."""

    key: RunKey
    model: LoadedModel
    trace: AttentionTrace


@contextmanager
def explained_errors(prefix: str = "", describe: Callable[[ValueError], str] = str):
    """Show the expected errors of the block (bad input, a model that cannot load: every
    ``ValueError``) as a message on the page, then stop the page.

    Args:
        prefix: put before the message (e.g. "Could not load x: ").
        describe: turns the error into the message (default: its own text).
    """
    try:
        yield
    except ValueError as error:
        st.error(literal(prefix + describe(error)))
        st.stop()


def random_weights_note(spec: str) -> None:
    """Say so on the page when ``spec`` has random weights."""
    if spec in RANDOM_WEIGHTS:
        st.info(f"{spec} has random weights: it was never trained, so its attention shows "
                f"positions and repeated words, not meaning. own-translator, minilm and smollm2 "
                f"are trained.", icon="🎲")


def state_limits(loaded: LoadedModel, bounds) -> None:
    """Say in the sidebar how long a text this server traces with ``loaded``, before it runs."""
    budget = token_budget(loaded, bounds.request_bytes)
    st.sidebar.caption(f"Here {literal(loaded.name)} on {loaded.device} reads texts of up to "
                       f"{budget:,} tokens and {bounds.max_chars:,} characters; head statistics, "
                       f"model view and rollout up to {bounds.analysis_tokens:,} tokens.")


def load_run() -> Run:
    """The loaded model and the trace of the sidebar's text; explains problems and stops."""
    from app_pages.cache import get_model, get_trace, limits

    spec, device = settings()
    bounds = limits()
    with explained_errors():
        text, encoding = current_text(bounds.max_chars)
        target = within(str(st.session_state.get("target", "")).strip(), bounds.max_chars,
                        "the target text") or None
    upload = st.session_state.get("upload")
    if upload is not None:
        note = (" Read as GB18030 (GBK), the usual encoding of Chinese text on Windows; if the "
                "characters look wrong, save the file as UTF-8." if encoding == "GB18030" else "")
        st.caption(f"Analysing the uploaded file {literal(upload.name)} ({len(text):,} "
                   f"characters).{note}")
    if not spec:
        st.info("Type a Hugging Face hub id or a local checkpoint path in the sidebar.")
        st.stop()
    with explained_errors(f"Could not load {spec[:80]}: "):
        loaded = get_model(spec, device)
    state_limits(loaded, bounds)
    random_weights_note(spec)
    if not text.strip():
        st.info("Type some text in the sidebar to see its attention.")
        st.stop()
    if loaded.family is not Family.ENCODER_DECODER:
        target = None
    key = RunKey(spec, device, text, target)
    with explained_errors(describe=describe_error(spec)):
        run = Run(key, loaded, get_trace(*key))
    st.session_state[EXPORT_CONTEXT] = (spec.rsplit("/", 1)[-1], " ".join(text.split()[:6]))
    st.sidebar.download_button(
        "This trace (.npz)", data=lambda: trace_bytes(run.trace),
        file_name=f"{export_name('trace')}.npz", mime="application/octet-stream",
        key="trace_npz", on_click="ignore", icon=":material/download:",
        help="Every attention weight of this run in the export format (numpy.load reads it).")
    show_token_notes(run)
    return run


def trace_bytes(trace: AttentionTrace) -> bytes:
    """The trace in its export format (.npz), as bytes."""
    with tempfile.TemporaryDirectory() as folder:
        return trace.save(Path(folder) / "trace.npz").read_bytes()


# Plotly's toolbar, kept to what a reader uses, so that it covers less of a chart's top edge;
# its camera saves a PNG at three times the chart's size.
CHART_CONFIG = {"displaylogo": False,
                "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d", "zoomIn2d",
                                           "zoomOut2d"]}
EXPORTS = {"PNG": ("png", "image/png"), "SVG": ("svg", "image/svg+xml"),
           "PDF": ("pdf", "application/pdf"), "HTML": ("html", "text/html"),
           "CSV": ("csv", "text/csv")}
FIGURES = "_page_figures"  # this run's figures, for the page's ZIP (app.py)
EXPORT_CONTEXT = "_export_context"  # the model and the text the exported files are named after


def export_name(*parts) -> str:
    """A file name for this page's exports: the model and the text's first words, then
    ``parts`` (kind, layer, head, ...)."""
    context = st.session_state.get(EXPORT_CONTEXT, ())
    return export.file_stem(*context, *parts)


def export_files(figure, stem: str, table: Callable[[], bytes] | None = None
                 ) -> dict[str, Callable[[], bytes]]:
    """``{file name: how to make it}`` for one figure (a ``go.Figure`` or its dict): PNG, SVG,
    PDF, offline HTML, CSV. Nothing is made until asked."""

    def as_figure() -> go.Figure:
        return figure if isinstance(figure, go.Figure) else go.Figure(figure)

    return {f"{stem}.png": lambda: export.image(as_figure(), "png"),
            f"{stem}.svg": lambda: export.image(as_figure(), "svg"),
            f"{stem}.pdf": lambda: export.image(as_figure(), "pdf"),
            f"{stem}.html": lambda: export.html(as_figure(), stem),
            f"{stem}.csv": table or (lambda: export.figure_table(as_figure()))}


def chart(figure, *, key: str, container=st, name: tuple = (),
          table: Callable[[], bytes] | None = None, **kwargs):
    """``st.plotly_chart`` with the app's toolbar and an Export menu (PNG, SVG, PDF rendered on
    the server, offline HTML, CSV); returns the selection state when asked.

    Args:
        name: what the exported files are named after, besides the model and the text (e.g.
            kind, layer, head); default the chart's key.
        table: makes the CSV of what the chart shows, when the page has it exactly (else it
            is read from the figure); called only when the CSV is downloaded.
    """
    stem = export_name(*(name or (key,)))
    config = {**CHART_CONFIG, "toImageButtonOptions": {
        "format": "png", "scale": export.IMAGE_SCALE, "filename": stem}}
    event = container.plotly_chart(figure, key=key, config=config, **kwargs)
    files = export_files(figure, stem, table)
    st.session_state.setdefault(FIGURES, {}).update(files)
    with container.popover("Export", icon=":material/download:"):
        st.caption("Rendered on the server at 3× for PNG; HTML works offline.")
        for label, (extension, mime) in EXPORTS.items():
            st.download_button(label, data=files[f"{stem}.{extension}"],
                               file_name=f"{stem}.{extension}", mime=mime,
                               key=f"{key}_export_{extension}", on_click="ignore")
    return event


def page_downloads() -> None:
    """The sidebar's downloads of a page that drew figures: every figure in one ZIP."""
    files = st.session_state.get(FIGURES) or {}
    if files:
        st.sidebar.download_button(
            f"All {len(files) // len(EXPORTS)} figures of this page (ZIP)",
            data=lambda: export.bundle({name: make() for name, make in files.items()}),
            file_name=f"{export_name('figures')}.zip", mime="application/zip",
            key="page_zip", on_click="ignore", icon=":material/folder_zip:")


def kind_selector(trace, container=st, key: str = "kind", kinds=None) -> str:
    """A select box of the trace's attention kinds."""
    kinds = kinds or trace.names
    return widgets.selectbox("Attention", kinds, key=key, container=container,
                             format_func=lambda n: f"{n} · {KIND_LABELS[n]}")


def open_head(name: str, layer: int, head: int) -> None:
    """Show one head in the Explore page."""
    st.session_state["open_head"] = (name, layer, head)
    st.switch_page("app_pages/explore.py")


def window_selector(n_tokens: int, limit: int, key: str) -> tuple[int, int]:
    """A token window ``(start, stop)`` of at most ``limit`` tokens for long inputs."""
    if n_tokens <= limit:
        return 0, n_tokens
    start = widgets.slider(f"Window start (the input has {n_tokens} tokens; {limit} are shown)",
                           0, n_tokens - limit, 0, key=key)
    return start, start + limit


def bounded_analysis(run: Run, name: str, what: str) -> None:
    """Stop the page with a message when the trace is longer than this server's analyses of
    every head read (``what``: the analysis, e.g. "Head statistics")."""
    from app_pages.cache import limits

    with explained_errors():
        check_analysis(max(run.trace.axes(name)[0].size, run.trace.axes(name)[1].size),
                       limits().analysis_tokens, what)
