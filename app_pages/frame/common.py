"""Sidebar settings shared by every page, kept in ``st.session_state``; the shared load of a run;
the one way a page explains an expected error."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import plotly.graph_objects as go
import plotly.io
import streamlit as st

import i18n
import model
from app_pages.frame import widgets
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from i18n import N_, _
from model import AttentionTrace, Family, LoadedModel, UnknownWordsError
from model.analysis.tokens import token_notes
from model.budget import FIGURE_BYTES, check_analysis, size, token_budget
from model.corpus.sentences import decode_text
from model.errors import listed
from viz import export, present

DEFAULT_MODEL = "own-translator"
DEFAULT_TEXT = "The cat sat on the mat"
DEVICES = ("auto", "cpu", "cuda")
OTHER = "other…"
MODEL_HELP = {  # in English, translated where shown
    "own-translator": N_("the lesson's encoder-decoder, trained to translate a small English "
                         "vocabulary into Chinese (The cat sat on the mat → 猫 坐 在 垫子 上)"),
    "own-random": N_("the lesson's full-size encoder-decoder (512 wide, 8 heads, 6 + 6 layers) "
                     "with random weights; its vocabulary is built from your text"),
    "minilm": N_("all-MiniLM-L6-v2: a pretrained 6-layer BERT encoder (12 heads) for any "
                 "English text"),
    "smollm2": N_("SmolLM2-135M-Instruct: a pretrained 30-layer Llama decoder, 9 query / 3 "
                  "key-value heads, for any text"),
    OTHER: N_("a Hugging Face hub id (needs network) or a local checkpoint folder or .gguf "
              "file"),
}
# Models whose weights were never trained: their attention shows structure, not meaning.
RANDOM_WEIGHTS = ("own-random",)
KIND_LABELS = {  # in English, translated where shown
    "encoder.self": N_("encoder self-attention"),
    "decoder.self": N_("decoder masked self-attention"),
    "decoder.cross": N_("decoder cross-attention (target → source)"),
}

# The names of a trace's family and positional scheme, as pages show them (translated there).
FAMILY_NAMES = {"encoder-only": N_("encoder-only"), "decoder-only": N_("decoder-only"),
                "encoder-decoder": N_("encoder-decoder")}
SCHEME_NAMES = {"sinusoidal": N_("sinusoidal"), "rope": N_("rope"), "learned": N_("learned"),
                "relative bias": N_("relative bias")}


def named(names: dict[str, str], value) -> str:
    """``value`` (a family, a scheme) by its translated name; an unknown one as it is."""
    return _(names[str(value)]) if str(value) in names else str(value)


MAX_UPLOAD_MB = 1  # also server.maxUploadSize in .streamlit/config.toml


SHARED_KEYS = ("model_choice", "model_other", "device", "text", "target", "lang", "present",
               "palette")
# Pages' widgets whose values outlive a visit to another page (what a user typed or chose on
# Compare and Corpus); a reload keeps what the page's link carries.
KEPT_KEYS = ("cmp_mode", "cmp_a", "cmp_b", "cmp_kind", "cmp_layer", "cmp_head", "cmp_text",
             "cmp_model_b", "cmp_ma_kind", "cmp_ma_layer", "cmp_ma_head", "cmp_mb_kind",
             "cmp_mb_layer", "cmp_mb_head", "cmp_stage_source", "cmp_stage_target",
             "cmp_stage_layer", "cmp_stage_head",
             "cp_pasted", "cp_queries", "cp_keys", "cp_before", "cp_kind", "cp_metric",
             "cp_layer", "cp_head", "cp_view")
PALETTES = {  # what colours weights: the default, or a colour-blind-safe scale
    "default": N_("Blues (default)"),
    "cividis": N_("Cividis (colour-blind safe)"),
    "viridis": N_("Viridis (colour-blind safe)"),
}


def choose_language() -> str:
    """The language of this run: the sidebar's choice, else the link's (``lang=``), else the
    browser's locale, else English; it is set for every string of the run."""
    code = st.session_state.get("lang")
    if code not in i18n.LANGUAGES:
        code = i18n.normalise(st.context.locale) or i18n.DEFAULT
        st.session_state["lang"] = code
    i18n.set_language(code)
    return code


def presenting() -> bool:
    """Whether presentation mode is on (large fonts for a projector, values in cells)."""
    return bool(st.session_state.get("present", False))


def sidebar(with_text: bool = True) -> None:
    """Draw the shared sidebar: language, presentation mode, model, device and (for the
    analysis pages) the text."""
    # Streamlit forgets a widget's value after a run that does not draw it (the Translate and
    # Positions pages hide the text). Writing the values back makes them plain session state,
    # which lasts until the widget is drawn again.
    for key in (*SHARED_KEYS, *KEPT_KEYS):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    from app_pages.cache.getters import policy

    with st.sidebar:
        widgets.radio(_("Language"), list(i18n.LANGUAGES), key="lang", horizontal=True,
                      format_func=i18n.LANGUAGES.get)
        st.toggle(_("Presentation mode"), key="present",
                       help=_("Presentation mode: fonts large enough for a projector, the value "
                              "written in each cell of small matrices, steps shown one at a "
                              "time, the sidebar closed."))
        widgets.selectbox(_("Colours"), list(PALETTES), key="palette",
                          format_func=lambda p: _(PALETTES[p]),
                          help=_("The colours of attention weights; Cividis and Viridis read "
                                 "the same to every kind of colour vision and in grey print."))
        choices = (DEFAULT_MODEL, *(m for m in model.BUNDLED if m != DEFAULT_MODEL))
        choices += (OTHER,) if policy().other else ()
        choice = widgets.selectbox(
            _("Model"), choices, key="model_choice", format_func=model_label,
            help="\n".join(f"- **{model_label(c)}**: {_(h)}" for c, h in MODEL_HELP.items()
                           if c in choices))
        st.caption(_(MODEL_HELP[choice]))
        if choice == OTHER:
            st.text_input(_("Hub id or local path"), key="model_other",
                          max_chars=model.MAX_SPEC,
                          placeholder=_("e.g. gpt2, ./my-checkpoint, ~/models/tiny.gguf"))
        if with_text:
            uploaded = st.session_state.get("upload") is not None
            # no max_chars: the browser would cut a long paste silently; the page refuses a
            # text over the limit with a message and keeps it in the box (load_run)
            st.text_area(_("Text"), **initial("text", DEFAULT_TEXT), key="text", height=100,
                         disabled=uploaded,
                         help=_("Type or paste text (Ctrl+Enter to apply); it is tokenised as "
                                "the model does. While a file is loaded, the file is analysed "
                                "instead."))
            st.file_uploader(_("…or upload a text file"), type=["txt", "md"], key="upload",
                             max_upload_size=MAX_UPLOAD_MB,
                             help=_("UTF-8, or GB18030/GBK as Chinese Windows saves it. While a "
                                    "file is loaded it replaces the box above; remove it (×) to "
                                    "type again."))
            st.text_input(_("Target text (encoder-decoder models, optional)"), key="target",
                          placeholder=_("e.g. 猫 坐 在 垫子 上"),
                          help=_("The output the decoder is fed word by word (teacher forcing). "
                                 "Leave it empty to trace the model's own output. For "
                                 "own-translator: Chinese words separated by spaces."))
        widgets.radio(_("Device"), DEVICES, key="device", horizontal=True,
                      help=_("auto runs on CUDA when this machine has a GPU, else on the CPU."))


def initial(key: str, value) -> dict:
    """A widget's default, given only while session state (a link, an earlier run) holds no
    value for it: Streamlit warns when a widget gets both."""
    return {} if key in st.session_state else {"value": value}


def model_label(choice: str) -> str:
    """How the model menu names a choice (the bundled names stay as they are)."""
    return _("other…") if choice == OTHER else choice


def settings() -> tuple[str, str]:
    """The chosen ``(model spec, device)``; the spec is empty until an 'other' one is typed."""
    choice = st.session_state.get("model_choice", DEFAULT_MODEL)
    spec = str(st.session_state.get("model_other", "")).strip() if choice == OTHER else choice
    return spec, st.session_state.get("device", "auto")


def current_text(max_chars: int | None = None) -> tuple[str, str | None]:
    """The text to analyse and, for an uploaded file, the encoding it was read in (else
    None): an uploaded file's text, else the text box's.

    Raises:
        ValueError: the file cannot be read, or the text is longer than ``max_chars``.
    """
    upload = st.session_state.get("upload")
    if upload is not None:
        text, encoding = decode_text(upload.getvalue(), upload.name)
    else:
        text, encoding = str(st.session_state.get("text", DEFAULT_TEXT)), None
    what = _("the file") if upload is not None else _("the text")
    return within(text, max_chars, what), encoding


def within(text: str, max_chars: int | None, what: str) -> str:
    """``text``, refused (``ValueError``) when longer than ``max_chars``."""
    if max_chars is not None and len(text) > max_chars:
        raise ValueError(_("{what} has {count:,} characters; this server reads at most "
                           "{limit:,}. Shorten it.").format(what=what, count=len(text),
                                                          limit=max_chars))
    return text


# Where to go when a model has no token for part of a text.
READS_ANY_SCRIPT = N_("smollm2 reads any language and script, byte by byte (Chinese "
                       "included): choose it in the sidebar.")
# What the own models with a fixed vocabulary read, for messages about unknown words.
READS = {"own-translator": (N_("English words"), "The cat sat on the mat",
                            N_("Chinese words separated by spaces"), "猫 坐 在 垫子 上")}


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
            spec, (N_("words of its vocabulary"), "", N_("words of its vocabulary"), ""))
        source, target = _(source), _(target)
        if error.side == "target":
            return _("The target text holds words {model} does not know: {words}. It writes "
                     "{target}, for example “{example}”. Nothing was dropped.").format(
                model=spec, words=words, target=target, example=target_example)
        if source_example:
            source = _("{what}, for example “{example}”").format(what=source,
                                                                 example=source_example)
        if vocabulary_above:
            return _("{model} does not know: {words}. Nothing was dropped: replace them with "
                     "words from the vocabulary above (it reads {source}).").format(
                model=spec, words=words, source=source)
        return _("{model} does not know: {words}. It reads {source}; the Translate page lists "
                 "its vocabulary. Nothing was dropped. For any text, choose minilm or smollm2 "
                 "in the sidebar.").format(model=spec, words=words, source=source)

    return describe


def show_token_notes(run: Run) -> None:
    """Warn where the tokenizer lost ([UNK]) or split (byte pieces) part of the input."""
    for note in token_notes(run.trace):
        examples = " ".join(note.examples) + (" …" if note.count > len(note.examples) else "")
        spec = run.key.spec
        if note.kind == "unknown":
            st.warning(literal(
                _("{count} of {total} tokens are [UNK]: {model} has no token for {examples}. "
                  "Attention to an [UNK] says nothing about the text it replaced; this model's "
                  "vocabulary does not cover it (it may have been trained on another language "
                  "or script).").format(count=note.count, total=note.total, model=spec,
                                        examples=examples or _("part of the text"))
                + " " + _(READS_ANY_SCRIPT)))
        else:
            st.info(literal(
                _("{count} characters ({examples}) are split over several tokens, labelled like "
                  "{label}: {model} reads them as bytes, so one character's attention is spread "
                  "over its pieces.").format(count=note.count, examples=examples,
                                             label=note.label, model=spec)))


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
        st.info(_("{model} has random weights: it was never trained, so its attention shows "
                  "positions and repeated words, not meaning. own-translator, minilm and "
                  "smollm2 are trained.").format(model=spec), icon="🎲")


def state_limits(loaded: LoadedModel, bounds) -> None:
    """Say in the sidebar how long a text this server traces with ``loaded``, before it runs."""
    budget = token_budget(loaded, bounds.request_bytes)
    st.sidebar.caption(_("Here {model} on {device} reads texts of up to {tokens:,} tokens and "
                         "{chars:,} characters; head statistics, model view and rollout up to "
                         "{analysis:,} tokens.").format(
        model=literal(loaded.name), device=loaded.device, tokens=budget, chars=bounds.max_chars,
        analysis=bounds.analysis_tokens))


def load_run() -> Run:
    """The loaded model and the trace of the sidebar's text; explains problems and stops."""
    from app_pages.cache.getters import get_model, get_trace, limits

    spec, device = settings()
    bounds = limits()
    with explained_errors():
        text, encoding = current_text(bounds.max_chars)
        target = within(str(st.session_state.get("target", "")).strip(), bounds.max_chars,
                        _("the target text")) or None
    upload = st.session_state.get("upload")
    if upload is not None:
        note = (" " + _("Read as GB18030 (GBK), the usual encoding of Chinese text on Windows; "
                        "if the characters look wrong, save the file as UTF-8.")
                if encoding == "GB18030" else "")
        st.caption(_("Analysing the uploaded file {name} ({count:,} characters).").format(
            name=literal(upload.name), count=len(text)) + note)
    if not spec:
        st.info(_("Type a Hugging Face hub id or a local checkpoint path in the sidebar."))
        st.stop()
    with explained_errors(_("Could not load {model}: ").format(model=spec[:80])):
        loaded = get_model(spec, device)
    state_limits(loaded, bounds)
    random_weights_note(spec)
    if not text.strip():
        st.info(_("The uploaded file {name} holds no text: upload another, or remove it (×) to "
                  "type in the sidebar.").format(name=literal(upload.name))
                if upload is not None else
                _("Type some text in the sidebar to see its attention."))
        st.stop()
    if loaded.family is not Family.ENCODER_DECODER:
        target = None
    key = RunKey(spec, device, text, target)
    with explained_errors(describe=describe_error(spec)):
        run = Run(key, loaded, get_trace(*key))
    st.session_state[EXPORT_CONTEXT] = (spec.rsplit("/", 1)[-1], " ".join(text.split()[:6]))
    st.sidebar.download_button(
        _("This trace (.npz)"), data=lambda: trace_bytes(run.trace),
        file_name=f"{export_name('trace')}.npz", mime="application/octet-stream",
        key="trace_npz", on_click="ignore", icon=":material/download:",
        help=_("Every attention weight of this run in the export format (numpy.load reads "
               "it)."))
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

    makers = {f"{stem}.png": lambda: export.image(as_figure(), "png"),
              f"{stem}.svg": lambda: export.image(as_figure(), "svg"),
              f"{stem}.pdf": lambda: export.image(as_figure(), "pdf"),
              f"{stem}.html": lambda: export.html(as_figure(), stem),
              f"{stem}.csv": table or (lambda: export.figure_table(as_figure()))}
    return {name: in_this_language(make) for name, make in makers.items()}


def in_this_language(make: Callable[[], bytes]) -> Callable[[], bytes]:
    """``make``, run in this run's language wherever it runs: Streamlit makes a download
    when it is clicked, in a thread of its own that speaks the default language."""
    code = i18n.language()

    def made() -> bytes:
        with i18n.use(code):
            return make()

    return made


def shown_figure(figure, share: float = 1.0):
    """``figure`` as this session shows it: in the chosen palette, and restyled for a
    projector in presentation mode (``share``: the part of the page's width the chart gets)."""
    palette = st.session_state.get("palette", "default")
    if palette in present.PALETTES and palette != "default":
        figure = present.with_palette(figure, palette)
    if presenting():
        figure = present.for_projector(figure, width_px=present.PLOT_WIDTH_PX * share)
    return figure


MAX_FIGURE_BYTES = FIGURE_BYTES  # the most one chart sends; a larger one is refused


def figure_bytes(figure) -> int:
    """The bytes of ``figure`` (a ``go.Figure`` or its dict) as sent to the browser (JSON)."""
    if isinstance(figure, go.Figure):
        return len(figure.to_json(validate=False))
    return len(plotly.io.to_json(figure, validate=False))


def chart(figure, *, key: str, container=st, name: tuple = (),
          table: Callable[[], bytes] | None = None, share: float = 1.0, **kwargs):
    """``st.plotly_chart`` with the app's toolbar and an Export menu (PNG, SVG, PDF rendered on
    the server, offline HTML, CSV); returns the selection state when asked.

    Args:
        name: what the exported files are named after, besides the model and the text (e.g.
            kind, layer, head); default the chart's key.
        table: makes the CSV of what the chart shows, when the page has it exactly (else it
            is read from the figure); called only when the CSV is downloaded.
        share: the part of the page's width the chart gets (½ in one of two columns), for
            fitting its labels in presentation mode.
    """
    figure = shown_figure(figure, share)
    sent = figure_bytes(figure)
    if sent > MAX_FIGURE_BYTES:  # refused here: Streamlit would show its raw size error
        container.warning(_("This chart would send {size} to the browser; this server sends "
                            "at most {most} a chart. Shorten the text, or choose a smaller "
                            "view.").format(size=size(sent), most=size(MAX_FIGURE_BYTES)),
                          icon=":material/block:")
        return None
    stem = export_name(*(name or (key,)))
    config = {**CHART_CONFIG, "toImageButtonOptions": {
        "format": "png", "scale": export.IMAGE_SCALE, "filename": stem}}
    event = container.plotly_chart(figure, key=key, config=config, **kwargs)
    files = export_files(figure, stem, table)
    st.session_state.setdefault(FIGURES, {}).update(files)
    with container.popover(_("Export"), icon=":material/download:"):
        st.caption(_("Rendered on the server at 3× for PNG; HTML works offline."))
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
            _("All {count} figures of this page (ZIP)").format(count=len(files) // len(EXPORTS)),
            data=lambda: export.bundle({name: make() for name, make in files.items()}),
            file_name=f"{export_name('figures')}.zip", mime="application/zip",
            key="page_zip", on_click="ignore", icon=":material/folder_zip:")


def kind_selector(trace, container=st, key: str = "kind", kinds=None) -> str:
    """A select box of the trace's attention kinds."""
    kinds = kinds or trace.names
    return widgets.selectbox(_("Attention"), kinds, key=key, container=container,
                             format_func=lambda n: f"{n} · {_(KIND_LABELS[n])}")


# The head statistics' names as shown (the keys of model.analysis.statistics.STATS, and the
# corpus table's span column).
METRIC_NAMES = {"entropy": N_("entropy"), "distance": N_("distance"),
                "first_token": N_("first_token"), "previous_token": N_("previous_token"),
                "self": N_("self"), "span": N_("span attention")}


def metric_name(metric: str) -> str:
    """A metric's name in the current language."""
    return _(METRIC_NAMES[metric]) if metric in METRIC_NAMES else metric


def open_head(name: str, layer: int, head: int) -> None:
    """Show one head in the Explore page."""
    st.session_state["open_head"] = (name, layer, head)
    st.switch_page(script("explore"))


def window_selector(n_tokens: int, limit: int, key: str) -> tuple[int, int]:
    """A token window ``(start, stop)`` of at most ``limit`` tokens for long inputs."""
    if n_tokens <= limit:
        return 0, n_tokens
    start = widgets.slider(_("Window start (the input has {count} tokens; {limit} are "
                             "shown)").format(count=n_tokens, limit=limit),
                           0, n_tokens - limit, 0, key=key)
    return start, start + limit


def bounded_analysis(run: Run, name: str, what: str) -> None:
    """Stop the page with a message when the trace is longer than this server's analyses of
    every head read (``what``: the analysis, e.g. "Head statistics")."""
    from app_pages.cache.getters import limits

    with explained_errors():
        check_analysis(max(run.trace.axes(name)[0].size, run.trace.axes(name)[1].size),
                       limits().analysis_tokens, what)


def stepper(label: str, n_steps: int, *, key: str, default: int, container=st,
            help: str | None = None) -> int:
    """A step ``1..n_steps`` chosen with previous/next buttons beside a slider, for showing a
    view one step at a time in class; returns the step."""

    def move(by: int) -> None:
        st.session_state[key] = min(max(int(st.session_state.get(key, default)) + by, 1),
                                    n_steps)

    if n_steps < 2:  # a slider needs two ends
        st.session_state[key] = 1
        return 1
    back, middle, forward = container.columns([1, 8, 1], vertical_alignment="bottom")
    step = widgets.slider(label, 1, n_steps, default, key=key, container=middle, help=help)
    back.button("", icon=":material/arrow_back:", key=f"{key}_back", on_click=move, args=(-1,),
                disabled=step <= 1, help=_("Previous step"), use_container_width=True)
    forward.button("", icon=":material/arrow_forward:", key=f"{key}_next", on_click=move,
                   args=(1,), disabled=step >= n_steps, help=_("Next step"),
                   use_container_width=True)
    return step
