"""English and 中文 from one catalog: every marked string has its Chinese text, every page
renders in both languages with nothing left untranslated, and the code marks strings the way
Babel can extract them."""

from __future__ import annotations

import ast
import html
import json
import re
import unicodedata

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

import i18n
from app_pages.frame.navigation import PAGES as NAVIGATION
from tests.helpers import ROOT, SEED_SENTENCE, app_test

SOURCES = ("app.py", "app_pages", "viz", "model", "i18n")
FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*(?:[:!][^{}]*)?)\}(?!\})")
PAGES = [page.url_path for page in NAVIGATION]  # every page, the lessons included ("": Start)


def _source_files():
    for source in SOURCES:
        path = ROOT / source
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def extracted() -> dict[str, str]:
    """Every string marked with ``_()`` or ``N_()`` in the app's sources, as Babel extracts
    them: ``{message: where}``."""
    found = {}
    method_map = [("**.py", "python")]
    for source in SOURCES:
        path = ROOT / source
        if path.is_file():
            with path.open("rb") as handle:
                from babel.messages.extract import extract
                for line, message, _comments, _context in extract("python", handle):
                    found.setdefault(message, f"{source}:{line}")
            continue
        for filename, line, message, _comments, _context in extract_from_dir(
                path, method_map=method_map):
            found.setdefault(message, f"{source}/{filename}:{line}")
    return found


@pytest.fixture(scope="module")
def catalog():
    with i18n.CATALOG.open("rb") as handle:
        return read_po(handle, locale="zh")


def test_every_marked_string_has_its_english_and_chinese_text(catalog):
    marked = extracted()
    assert len(marked) > 300  # the whole interface is marked
    lacking = {m: where for m, where in marked.items()
               if not isinstance(m, str) or not m.strip() or catalog.get(m) is None
               or not catalog.get(m).string or catalog.get(m).fuzzy}
    assert not lacking, f"{len(lacking)} strings lack Chinese text (make catalog): " + "\n".join(
        f"{where}: {message!r}" for message, where in list(lacking.items())[:20])


def test_every_translation_keeps_its_fields_and_markup(catalog):
    for message in catalog:
        if not message.id:
            continue
        assert sorted(FIELD.findall(message.id)) == sorted(FIELD.findall(message.string)), \
            message.id
        for mark in ("%{", "<br>", "**", "−∞", "\n"):
            assert message.id.count(mark) == message.string.count(mark), (mark, message.id)


def _flanking_problems(text: str) -> list[str]:
    """``**`` runs that markdown would not read as bold: CommonMark closes ``**`` after a
    punctuation mark only before a space or another mark (``**第 4 步：**已`` stays literal),
    and opens it before one only after a space or a mark."""
    def kind(char: str) -> str:
        if not char or char.isspace():
            return "space"
        return "mark" if unicodedata.category(char)[0] in "PS" else "letter"

    problems = []
    for number, match in enumerate(re.finditer(r"\*\*", text)):
        before = kind(text[match.start() - 1] if match.start() else "")
        after = kind(text[match.end()] if match.end() < len(text) else "")
        if number % 2 and before == "mark" and after == "letter":
            problems.append(text[max(0, match.start() - 8):match.end() + 8])
        if not number % 2 and after == "mark" and before == "letter":
            problems.append(text[max(0, match.start() - 8):match.end() + 8])
    return problems


def test_bold_in_chinese_still_reads_as_bold(catalog):
    problems = {m.id: _flanking_problems(m.string) for m in catalog if m.id}
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems
    assert _flanking_problems("**第 4 步：**已写出") and not _flanking_problems("**第 4 步**：已")


def test_the_catalog_holds_no_stale_entries(catalog):
    marked = extracted()
    stale = [m.id for m in catalog if m.id and m.id not in marked]
    assert not stale, f"not in the code any more (make catalog): {stale[:10]}"


def test_the_lessons_terms_are_the_seeds():
    with i18n.use("zh"):
        assert "交叉注意力" in i18n._("decoder cross-attention (target → source)")
        assert "自注意力" in i18n._("encoder self-attention")
        assert "因果掩码" in i18n._("Causal mask")
        assert i18n._("Positions") == "位置编码"
        assert i18n._("Number of positions") == "位置数"


class _Marks(ast.NodeVisitor):
    """What Babel could not extract, and what would hide ``_``."""

    def __init__(self):
        self.problems: list[str] = []
        self.imports_underscore = False

    def visit_ImportFrom(self, node):
        if node.module == "i18n" and any(alias.name == "_" for alias in node.names):
            self.imports_underscore = True
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in ("_", "N_"):
            if len(node.args) != 1 or not (isinstance(node.args[0], ast.Constant)
                                           and isinstance(node.args[0].value, str)):
                # a name or attribute holding an N_() constant is fine; an f-string or a
                # concatenation is not (Babel extracts nothing from it)
                if not (len(node.args) == 1 and isinstance(node.args[0],
                                                          (ast.Name, ast.Attribute,
                                                           ast.Subscript, ast.Call))):
                    self.problems.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
        self.generic_visit(node)

    def _target(self, target, line):
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Store):
                self.problems.append(f"line {line}: assigns to _, hiding the translation")

    def visit_Assign(self, node):
        for target in node.targets:
            self._target(target, node.lineno)
        self.generic_visit(node)

    def visit_For(self, node):
        self._target(node.target, node.lineno)
        self.generic_visit(node)

    def visit_comprehension(self, node):
        self._target(node.target, getattr(node.target, "lineno", 0))
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self._target(item.optional_vars, node.lineno)
        self.generic_visit(node)


def test_marked_strings_are_literals_and_underscore_is_never_hidden():
    problems = []
    for path in _source_files():
        marks = _Marks()
        marks.visit(ast.parse(path.read_text(encoding="utf-8")))
        if not marks.imports_underscore:
            marks.problems = [p for p in marks.problems if "hiding" not in p]
        problems += [f"{path.relative_to(ROOT)} {p}" for p in marks.problems]
    assert not problems, "\n".join(problems)


def test_language_is_per_context_and_unknown_languages_are_refused():
    assert i18n.language() == "en"
    with i18n.use("zh"):
        assert i18n._("Model") == "模型"
        assert i18n.language() == "zh"
    assert i18n._("Model") == "Model"
    assert i18n.normalise("zh-CN") == "zh" and i18n.normalise("en_GB") == "en"
    assert i18n.normalise("fr") is None and i18n.normalise(None) is None
    with pytest.raises(ValueError, match="unknown language"):
        i18n.set_language("klingon")


# --- every page in both languages -------------------------------------------------------------

# Words a Chinese page may show in Latin letters: names, units, formats, the lesson's own
# English terms, and the text being analysed (its tokens).
LATIN_OK = {
    # model and file names, units, formats
    "own-translator", "own-random", "nllb", "m2m100", "minilm", "smollm2", "smollm2-135m-instruct",
    "all-minilm-l6-v2", "instruct", "llama", "bert", "gpt", "gpt2", "hugging", "face", "hub",
    "gguf", "cpu", "cuda", "gpu", "auto", "png", "svg", "pdf", "html", "csv", "zip", "npz",
    "txt", "md", "tsv", "jsonl",
    "utf-8", "utf", "gbk", "gb18030", "windows", "numpy", "load", "mib", "gib", "gb", "mb",
    "kb", "float32", "float16", "bfloat16", "cividis", "viridis", "english", "ctrl", "enter",
    "nats", "tiny", "checkpoint", "my", "models", "id", "own",
    # the lesson's own English terms, which the Chinese text keeps beside its own
    "transformer", "encoder", "decoder", "self", "cross", "softmax", "rope", "gqa", "ffn",
    "layernorm", "kv", "rollout", "teacher", "forcing", "sink", "pe", "rnn", "qk", "dₖ",
    "d_model", "d_k", "d_ff", "d_head", "sin", "cos", "sqrt", "unk", "cls", "sep", "pad",
    "bos", "eos", "pos", "dim",
    # the RNN half's names, which the lesson text writes in Latin letters too (§3.6, §5.1–5.3,
    # its references), and the recurrent models' names
    "lstm", "gru", "seq2seq", "bahdanau", "resnet", "relu", "own-rnn", "own-gru",
    "own-bahdanau",
    # What moves: the methods' authors and tools as their papers are cited, and the formulas'
    # indices (α_ij, v_j, W_Oʰ, w_first)
    "kobayashi", "mohebbi", "abnar", "zuidema", "yeh", "et", "al", "attentionviz", "pca",
    "t-sne", "transformers", "head_mask", "eager", "ij", "v_j", "w_o", "w_first",
}

def _strings_of(element) -> list[str]:
    """What a reader sees of one AppTest element: its text, label, help, options."""
    proto = element.proto
    texts = []
    for field in ("body", "label", "help", "placeholder"):
        value = getattr(proto, field, None)
        if isinstance(value, str) and value:
            texts.append(value)
    options = getattr(proto, "options", None)
    if options is not None and not isinstance(options, str):
        texts += [str(getattr(o, "label", o)) for o in options]
    if element.type == "plotly_chart":
        texts += _figure_strings(json.loads(proto.spec))
    return texts


def _figure_strings(figure: dict) -> list[str]:
    found = []

    def walk(node, key="", shown=("text", "hovertemplate", "name", "title")):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k, shown)
        elif isinstance(node, list) and key not in ("x", "y", "z", "customdata", "text",
                                                    "ticktext", "tickvals", "colorscale"):
            for v in node:
                walk(v, key, shown)
        elif isinstance(node, str) and key in shown:
            found.append(node)

    layout = figure.get("layout", {})
    walk(layout, shown=("text", "hovertemplate", "title"))  # an annotation's or a shape's
    # name is never drawn (it names them for templates and tests)
    for trace in figure.get("data", []):
        # a trace's name is seen only in a legend: heatmaps have none, and hidden entries
        # and hover boxes ending in <extra></extra> never show it
        in_legend = trace.get("showlegend", trace.get("type", "scatter") != "heatmap") \
            and layout.get("showlegend", True) is not False
        keys = ("hovertemplate", "colorbar") + (("name",) if in_legend else ())
        walk({k: v for k, v in trace.items() if k in keys})
    return found


def visible_strings(at) -> list[str]:
    texts = []
    for root in (at.main, at.sidebar):
        stack = [root]
        while stack:
            node = stack.pop()
            children = getattr(node, "children", None)
            if isinstance(children, dict) and children:
                stack.extend(children.values())
                label = getattr(getattr(node, "proto", None), "label", None)
                if isinstance(label, str) and label:
                    texts.append(label)
                continue
            try:
                texts += _strings_of(node)
            except AttributeError:
                pass
    return texts


def english_words(text: str, allowed: set[str]) -> list[str]:
    """Latin-letter words of ``text`` a Chinese page should not show."""
    text = re.sub(r"<script>.*?</script>|<style>.*?</style>", " ", text,
                  flags=re.DOTALL)  # not shown
    text = html.unescape(text)  # user text is written with character references (literal())
    text = re.sub(r"%\{[^}]*\}|<[^>]+>|&#?\w+;|https?://\S+|:material/\w+:", " ", text)
    text = re.sub(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.DOTALL)  # code, maths
    words = re.findall(r"[A-Za-z][A-Za-z0-9_\-]*", text)
    return [w for w in words if w.lower() not in allowed and len(w) > 1
            and not re.fullmatch(r"[A-Z]|[A-Z]\d*|[a-z]\d+|L\d+|[QKV]|x\d*", w)]


# A trace's names for its attention kinds (model.meta.Family.kinds): the API's, never shown.
RAW_KIND = re.compile(r"\b(?:encoder|decoder)\.(?:self|cross)\b")


def raw_kinds(at) -> list[str]:
    """The texts of a page (its figures' titles and hovers, its menus' options, its captions)
    that name an attention kind by its trace name rather than in words."""
    return [text[:120] for text in visible_strings(at) if RAW_KIND.search(text)]


@pytest.fixture(scope="module")
def vocabulary() -> list[str]:
    from model import load

    return load("own-translator", device="cpu").english_words()


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page or "start")
def test_every_page_renders_in_chinese_without_english_left(page, vocabulary):
    i18n.missing().clear()
    # AppTest formats the widgets' options in the test's own thread: it speaks Chinese too
    with i18n.use("zh"):
        at = app_test(page, lang="zh", model_choice="own-translator", text=SEED_SENTENCE)
    assert not at.exception, at.exception
    assert not i18n.missing(), f"asked for but not in the catalog: {sorted(i18n.missing())[:10]}"
    allowed = LATIN_OK | {w.lower() for w in re.findall(r"[A-Za-z]+", SEED_SENTENCE)}
    allowed |= {w.lower() for w in vocabulary}  # Translate lists the translator's words
    left = {}
    for text in visible_strings(at):
        words = english_words(text, allowed)
        if words:
            left[text[:120]] = words
    assert not left, "English left on a Chinese page:\n" + "\n".join(
        f"{words} in {text!r}" for text, words in list(left.items())[:15])
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in visible_strings(at))
    assert not raw_kinds(at), raw_kinds(at)  # "decoder.self" passes the word check above


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page or "start")
def test_every_page_renders_in_english(page):
    at = app_test(page, lang="en", model_choice="own-translator", text=SEED_SENTENCE)
    assert not at.exception, at.exception
    assert not raw_kinds(at), raw_kinds(at)  # English gets English words too
    # the lesson's Chinese examples (the translator's words, 猫 追 老鼠 它 of §4.3: by hand)
    # and the language switch's 中文 may show
    known = ("猫 坐 在 垫子 上", "垫子", "老鼠", "猫", "坐", "在", "上", "追", "它", "中文")
    chinese = []
    for text in visible_strings(at):
        for word in known:
            text = text.replace(word, "")
        if re.search(r"[\u4e00-\u9fff]", text):
            chinese.append(text)
    assert not chinese, chinese[:5]


# --- Chinese everywhere a reader looks: kinds, Streamlit's and Plotly's own words --------------

def test_attention_kinds_are_named_in_the_lessons_words():
    from app_pages.frame.settings import kind_label, kind_name
    from model.meta import Family

    kinds = {kind for family in Family for kind in family.kinds}
    assert kinds == {"encoder.self", "decoder.self", "decoder.cross"}  # every name a trace has
    expected = {"encoder.self": ("encoder self-attention", "编码器自注意力"),
                "decoder.self": ("decoder masked self-attention", "解码器掩码自注意力"),
                "decoder.cross": ("cross-attention", "交叉注意力")}
    for kind, (english, chinese) in expected.items():
        with i18n.use("en"):
            assert kind_name(kind) == english
            assert kind not in kind_label(kind) and "attention" in kind_label(kind)
        with i18n.use("zh"):
            assert kind_name(kind) == chinese
            assert chinese in kind_label(kind)
            assert not re.search(r"[A-Za-z]", kind_label(kind)), kind_label(kind)
    with i18n.use("zh"):
        assert kind_label("decoder.cross") == "解码器交叉注意力（目标 → 源）"
        assert kind_name("somewhere.else") == "somewhere.else"  # an unknown one as it is


def _titles(at) -> list[str]:
    return [json.loads(chart.proto.spec)["layout"].get("title", {}).get("text", "")
            for chart in at.get("plotly_chart")]


def test_explore_names_every_kind_in_chinese_in_its_menu_and_its_titles():
    with i18n.use("zh"):
        at = app_test("explore", lang="zh", model_choice="own-translator", text=SEED_SENTENCE)
        assert not at.exception, at.exception
        menu = at.selectbox(key="kind")
        assert list(menu.options) == ["编码器自注意力", "解码器掩码自注意力",
                                      "解码器交叉注意力（目标 → 源）"]
        for kind, words in (("encoder.self", "编码器自注意力"),
                            ("decoder.self", "解码器掩码自注意力"),
                            ("decoder.cross", "交叉注意力")):
            at.selectbox(key="kind").set_value(kind).run()
            assert not at.exception, at.exception
            assert at.selectbox(key="kind").value == kind  # the API's name behind the words
            title = _titles(at)[0]
            assert title.startswith(f"{words} · 第 "), title
            assert not raw_kinds(at), raw_kinds(at)


def test_streamlits_own_words_are_chinese_where_the_app_can_set_them():
    with i18n.use("zh"):
        at = app_test("head_view", lang="zh", model_choice="own-translator", text=SEED_SENTENCE)
    assert not at.exception, at.exception
    assert {box.proto.placeholder for box in at.selectbox} == {"请选择"}
    assert {box.proto.placeholder for box in at.multiselect} == {"请选择（可多选）"}
    # the uploader's button and its limits: CSS over Streamlit's English, a caption beneath
    styles = [html.value for html in at.html if "stFileUploaderDropzone" in html.value]
    assert styles and '"上传"' in styles[0] and "stFileUploaderDropzoneInstructions" in styles[0]
    assert "TXT/MD 文件，每个最大 1 MB" in [caption.value for caption in at.caption]
    # Plotly's toolbar: its locale and that locale's words, from the catalog
    config = json.loads(at.get("plotly_chart")[0].proto.config)
    assert config["locale"] == "zh-CN"
    words = config["locales"]["zh-CN"]["dictionary"]
    assert words["Zoom"] == "缩放" and words["Reset axes"] == "重置坐标轴"
    assert words["Download plot as a PNG"] == "下载为 PNG 图片"


def test_in_english_streamlits_own_words_are_left_to_it():
    at = app_test("head_view", lang="en", model_choice="own-translator", text=SEED_SENTENCE)
    assert not at.exception, at.exception
    assert {box.proto.placeholder for box in at.selectbox} == {"Choose an option"}
    assert not [html.value for html in at.html if "stFileUploaderDropzone" in html.value]
    config = json.loads(at.get("plotly_chart")[0].proto.config)
    assert "locale" not in config and "locales" not in config
