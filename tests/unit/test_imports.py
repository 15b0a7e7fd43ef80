"""Import rules of DESIGN.md and of model/'s rooms, checked in the sources and at run time.

- model/ never imports streamlit, viz or app_pages;
- model/analysis/ imports neither transformers nor streamlit nor the Hugging Face room;
- model/own/ (written from scratch) imports neither transformers nor the Hugging Face room, and
  model/hf/ not the own room: only model/loader.py knows both adapters;
- the trace's contract (trace, store, meta, interface, errors) is numpy only at run time;
- viz/ imports neither streamlit, torch, transformers nor anything of model/;
- i18n/ (the language catalogs, used by every layer) imports nothing of the app, and Babel only
  when a catalog is first read;
- the app's rooms are layered: app_pages/cache imports nothing of the frame (but its two leaves,
  errors and markdown), the views or the lessons; app_pages/frame nothing of the views or the
  lessons; a view no lesson; app_pages/live (the class database) neither streamlit, torch nor
  model/.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

CONTRACT = ("model/trace.py", "model/store.py", "model/meta.py", "model/interface.py",
            "model/errors.py")
RULES = {
    "model": {"streamlit", "viz", "app_pages"},
    "model/analysis": {"streamlit", "transformers", "model.hf", "viz", "app_pages"},
    # the lessons re-run the own network (model.own), never a checkpoint's
    "model/lessons": {"streamlit", "transformers", "model.hf", "viz", "app_pages"},
    "model/own": {"transformers", "model.hf", "streamlit"},
    "model/hf": {"model.own", "streamlit"},
    **{path: {"torch", "transformers", "model.own", "model.hf", "streamlit"} for path in CONTRACT},
    "viz": {"streamlit", "torch", "transformers", "model", "app_pages"},
    # the catalog sits beneath every layer: it imports none of them
    # the app's rooms: the cache below the frame, the frame below the pages
    "app_pages/cache": {"app_pages.frame", "app_pages.views", "app_pages.lessons"},
    "app_pages/frame": {"app_pages.views", "app_pages.lessons"},
    "app_pages/views": {"app_pages.lessons"},
    # the class database: SQLAlchemy only, no page, no model (the store is run without either)
    "app_pages/live": {"streamlit", "torch", "transformers", "model", "viz", "app_pages.cache",
                       "app_pages.frame", "app_pages.views", "app_pages.lessons"},
    "i18n": {"streamlit", "torch", "transformers", "numpy", "model", "viz", "app_pages"},
}
# What importing each package loads, checked in a fresh interpreter.
RUNTIME = {
    "model": {"streamlit", "viz", "app_pages"},
    "model.analysis.costs, model.analysis.positions, model.analysis.rollout, "
    "model.analysis.statistics, model.analysis.cuts, model.analysis.tokens": {
        "streamlit", "transformers"},
    "model.own.adapter, model.own.translator, model.own.train": {"transformers", "streamlit"},
    "model.trace, model.store, model.meta, model.interface, model.errors": {
        "torch", "transformers", "streamlit"},
    "viz": {"streamlit", "torch", "transformers", "model", "app_pages"},
    "app_pages.live.store": {"streamlit", "torch", "transformers", "model", "viz"},
    "i18n": {"streamlit", "torch", "transformers", "numpy", "babel", "model", "viz",
             "app_pages"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def imported_modules(path: Path) -> set[str]:
    """Absolute names of what a file imports at run time (TYPE_CHECKING blocks left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names: set[str] = set()

    def visit(node):
        if isinstance(node, ast.If) and _is_type_checking(node):
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


# What a room may import although a rule above forbids its folder: the frame's leaves (the one
# way of explaining an error, and Markdown quoting) serve the cache too.
ALLOWED = {"app_pages/cache": {"app_pages.frame.errors", "app_pages.frame.markdown"}}


def _forbidden(name: str, rules: set[str], allowed: set[str] = frozenset()) -> bool:
    if any(name == ok or name.startswith(ok + ".") for ok in allowed):
        return False
    return any(name == rule or name.startswith(rule + ".") for rule in rules)


@pytest.mark.parametrize("where", sorted(RULES))
def test_sources_import_nothing_their_room_forbids(where):
    target = ROOT / where
    files = [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))
    assert files
    for path in files:
        bad = sorted(n for n in imported_modules(path)
                     if _forbidden(n, RULES[where], ALLOWED.get(where, set())))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_the_frames_leaves_import_nothing_of_the_app_but_each_other():
    for leaf in ALLOWED["app_pages/cache"]:
        path = ROOT / (leaf.replace(".", "/") + ".py")
        app = {n for n in imported_modules(path) if n.startswith("app_pages")}
        assert app <= {m for ok in ALLOWED["app_pages/cache"] for m in app if m.startswith(ok)}, (
            f"{leaf} imports {sorted(app)}")


def test_relative_imports_are_resolved_against_the_files_package():
    names = imported_modules(ROOT / "model/analysis/costs.py")
    assert {"model.interface", "model.trace", "model.meta"} <= names


@pytest.mark.parametrize("modules", sorted(RUNTIME))
def test_importing_loads_no_forbidden_module(modules):
    forbidden = sorted(RUNTIME[modules])
    code = (f"import sys, {modules}; "
            f"print(sorted(m for m in sys.modules if any(m == f or m.startswith(f + '.') "
            f"for f in {forbidden!r})))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_only_the_loader_asks_which_adapter_it_holds():
    switch = re.compile(r"isinstance\([^)]*(HFModel|OwnModel|Translator)")
    for folder in ("model", "app_pages", "viz"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "model" / "loader.py":
                continue
            text = path.read_text(encoding="utf-8")
            assert not switch.search(text), f"{path.relative_to(ROOT)} switches on an adapter"


# The lessons' modules shared by several lessons; every other module of model/lessons and
# viz/lessons is named after the one lesson page that uses it.
SHARED_LESSON_MODULES = {"model.lessons": {"network", "source", "typed"},
                         "viz.lessons": {"layout", "numbers"}}


def test_every_lesson_page_has_its_files_named_after_it():
    from app_pages.frame.navigation import LESSON_PAGES

    assert LESSON_PAGES
    for room in SHARED_LESSON_MODULES:  # every lesson module is a lesson's or a shared one
        folder = ROOT / room.replace(".", "/")
        lessons = {Path(page.path).stem for page in LESSON_PAGES}
        for path in sorted(folder.glob("*.py")):
            assert path.stem == "__init__" or path.stem in lessons | SHARED_LESSON_MODULES[room], (
                f"{path.relative_to(ROOT)} is named after no lesson page")
    for page in LESSON_PAGES:
        script = ROOT / page.path
        assert script.is_file(), page.path
        name = script.stem
        used = set()
        for module in imported_modules(script):
            for room in SHARED_LESSON_MODULES:
                if module.startswith(room + "."):
                    own = module.removeprefix(room + ".").split(".")[0]
                    if (ROOT / room.replace(".", "/") / f"{own}.py").is_file():
                        used.add((room, own))
        strangers = sorted(f"{room}.{own}" for room, own in used
                           if own != name and own not in SHARED_LESSON_MODULES[room])
        assert not strangers, f"{page.path} imports another lesson's modules: {strangers}"
        for room in SHARED_LESSON_MODULES:  # a file named after the lesson is the lesson's
            if (ROOT / room.replace(".", "/") / f"{name}.py").is_file():
                assert (room, name) in used, f"{page.path} does not use {room}.{name}"


def test_the_lessons_model_room_reads_the_own_network_never_a_checkpoint():
    files = sorted((ROOT / "model/lessons").glob("*.py"))
    assert files
    for path in files:
        names = imported_modules(path)
        bad = sorted(n for n in names if _forbidden(n, {"transformers", "model.hf"}))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
    network = imported_modules(ROOT / "model/lessons/network.py")
    assert "model.own.hooks.record" in network  # the one recorder of the own models
