"""The docs match the code: every package's docstring names its modules and sub-packages, the
README's and docs/' links and file paths lead somewhere, and the pages, settings and export keys
the docs describe are the ones the code has."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE_ROOTS = ("app_pages", "model", "viz", "i18n")
DOCS = ROOT / "docs"
MARKDOWN = (ROOT / "README.md", *sorted(DOCS.glob("*.md")))


def _packages() -> list[Path]:
    """Every package (a folder with an ``__init__.py``) under the app's top-level packages."""
    return sorted(init.parent for top in PACKAGE_ROOTS for init in (ROOT / top).rglob("__init__.py")
                  if "__pycache__" not in init.parts)


def _members(package: Path) -> list[str]:
    """The modules (``__main__`` included) and sub-packages of ``package``, by name."""
    modules = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    subpackages = [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + subpackages)


def _names(docstring: str, name: str) -> bool:
    """Whether ``docstring`` names module ``name`` as a module: ``:mod:`.name```,
    ``:mod:`package.name```, ````name````, ```name```, ``name.py`` or ``name/`` (a bare word
    does not count: "text" or "run" would be found in any prose)."""
    word = re.escape(name)
    forms = (rf":mod:`~?[\w.]*\.?{word}`",     # :mod:`.engine`, :mod:`model.corpus.engine`
             rf"``{word}``", rf"(?<!`)`{word}`(?!`)",
             rf"(?<![\w.]){word}\.py\b", rf"(?<![\w.]){word}/")
    return any(re.search(form, docstring) for form in forms)


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_package_docstring_names_every_module_of_the_package(package):
    source = (package / "__init__.py").read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source)) or ""
    assert docstring.strip(), f"{package.relative_to(ROOT)}/__init__.py has no docstring"
    missing = [name for name in _members(package) if not _names(docstring, name)]
    assert not missing, (f"the docstring of {package.relative_to(ROOT)}/__init__.py does not "
                         f"name {missing} (write :mod:`.name` for each)")
    stale = [name for name in re.findall(r":mod:`~?\.(\w+)", docstring)
             if name not in _members(package)]
    assert not stale, (f"the docstring of {package.relative_to(ROOT)}/__init__.py names "
                       f"modules it does not have: {stale}")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, flags=re.M)}


def _links(path: Path) -> list[str]:
    """The targets of the markdown links and images of ``path`` (code blocks left out)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_docs_leads_to_a_file_and_heading_that_exist(page):
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        destination = (page.parent / file).resolve() if file else page
        if not destination.exists():
            broken.append(target)
        elif anchor and destination.suffix == ".md" and anchor not in _anchors(destination):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


PATH = re.compile(r"`((?:app_pages|model|viz|i18n|tests|bench|docs|\.ci|\.streamlit)/[\w./-]*)`")


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_the_docs_name_exists(page):
    named = PATH.findall(page.read_text(encoding="utf-8"))
    missing = sorted({path for path in named if not (ROOT / path).exists()})
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_readme_is_a_front_page_with_the_two_commands_near_the_top():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    top = "\n".join(text.splitlines()[:30])
    assert "make run" in top and "make test" in top
    assert "docs/screenshot.png" in top and (DOCS / "screenshot.png").stat().st_size < 300_000
    assert len(text.encode()) < 8_000, "the README is a front page: the rest goes in docs/"


def test_every_page_is_in_the_docs_with_its_url_path():
    from app_pages.frame.navigation import LESSON_PAGES, PAGES

    using = (DOCS / "using.md").read_text(encoding="utf-8")
    lessons = (DOCS / "lessons.md").read_text(encoding="utf-8")
    for page in PAGES:
        text = lessons if page in LESSON_PAGES else using
        assert f"`/{page.url_path}`" in text, f"{page.title} ({page.url_path!r}) is not listed"
        assert page.title in text


def test_every_lesson_is_listed_with_its_three_files():
    from app_pages.frame.navigation import LESSON_PAGES

    lessons = (DOCS / "lessons.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in lessons.splitlines()
            if line.startswith("| ") and "`/lesson_" in line}
    for page in LESSON_PAGES:
        assert page.title in rows, f"{page.title} has no row in docs/lessons.md"
        name = Path(page.path).stem
        for room in ("app_pages", "model", "viz"):
            path = f"{room}/lessons/{name}.py"
            assert f"`{path}`" in rows[page.title], f"docs/lessons.md: {page.title} lacks {path}"


def test_every_setting_the_code_reads_is_in_the_operators_table():
    code = "\n".join(p.read_text(encoding="utf-8") for top in ("app.py", *PACKAGE_ROOTS)
                     for p in ([ROOT / top] if top.endswith(".py") else (ROOT / top).rglob("*.py")))
    read = set(re.findall(r"ATTENTION_EXPLORER_[A-Z_]*[A-Z]", code))
    operating = (DOCS / "operating.md").read_text(encoding="utf-8")
    missing = sorted(name for name in read if f"`{name}`" not in operating)
    assert not missing, f"docs/operating.md does not list {missing}"


def test_the_export_format_names_every_key_the_code_writes(seed_trace):
    from model.meta import Step
    from model.trace import TOKEN_FIELDS

    doc = (DOCS / "export-format.md").read_text(encoding="utf-8")
    keys = [*seed_trace.metadata(), *Step(0, "猫", 0.9, (("猫", 0.9),)).to_dict(), "meta",
            *(name for fields in TOKEN_FIELDS.values() for name in fields),
            "encoder.self", "decoder.self", "decoder.cross"]
    missing = [key for key in keys if f"`{key}`" not in doc]
    assert not missing, f"docs/export-format.md does not describe {missing}"
