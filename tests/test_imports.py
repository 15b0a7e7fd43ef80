"""Import rules of DESIGN.md: model/ never imports streamlit; viz/ neither streamlit nor torch."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.conftest import ROOT

FORBIDDEN = {"model": {"streamlit", "viz", "app_pages"},
             "viz": {"streamlit", "torch", "transformers", "model", "app_pages"}}


def _imported_modules(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_sources_do_not_import_forbidden_modules(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    for path in files:
        bad = _imported_modules(path) & FORBIDDEN[package]
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_a_package_loads_no_forbidden_module(package):
    code = (f"import sys, {package}; "
            f"print(sorted(m for m in {sorted(FORBIDDEN[package])!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
