"""The layout's public surface: every package states its public names in a literal
``__all__``, that list is the one docs/architecture.md documents, every name in it resolves, and no
module of symrmt uses a star import."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.source_trees import package_modules

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "symrmt").rglob("__init__.py")
                  if "__pycache__" not in p.parts)


def _literal_all(package: str):
    tree = ast.parse((ROOT / Path(*package.split(".")) / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and getattr(target, "id", None) == "__all__":
            return ast.literal_eval(node.value)  # raises ValueError when it is not a literal
    return None


def _documented() -> dict:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Public names of each package", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"^\| `(symrmt[\w.]*)` \| (.*) \|$", line)
        if m:
            out[m.group(1)] = re.findall(r"`(\w+)`", m.group(2))
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_has_a_literal_all_that_resolves(package):
    names = _literal_all(package)
    assert names is not None, f"{package} has no __all__"
    assert len(set(names)) == len(names), f"{package}.__all__ repeats a name"
    module = importlib.import_module(package)
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"


def test_each_package_exports_exactly_its_documented_list():
    documented = _documented()
    assert sorted(documented) == PACKAGES, "docs/architecture.md lists other packages than symrmt has"
    for package in PACKAGES:
        assert sorted(_literal_all(package)) == sorted(documented[package]), package


def test_no_star_imports():
    star = []
    for path, _, tree in package_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                star.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not star, f"star imports: {star}"


def test_every_path_the_architecture_page_cites_exists():
    """Each ``symrmt.a.b`` in docs/architecture.md is a module, or a module's attribute (a call's path
    from the command line to a certified number names real functions)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for dotted in sorted(set(re.findall(r"\bsymrmt(?:\.\w+)+", text))):
        parts = dotted.split(".")
        for k in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                continue
            for name in parts[k:]:
                obj = getattr(obj, name, None)
            if obj is None:
                missing.append(dotted)
            break
    assert not missing, f"docs/architecture.md cites what does not exist: {missing}"


def test_the_slow_doctests_name_doctests():
    """Each name in the session's ``SLOW_DOCTESTS`` (tests/conftest.py) is an object of symrmt with a doctest: a
    stale name would let a doctest that takes seconds back into the fast tier unnoticed."""
    from tests.conftest import SLOW_DOCTESTS

    for name in SLOW_DOCTESTS:
        module, _, attr = name.rpartition(".")
        assert ">>>" in (getattr(importlib.import_module(module), attr).__doc__ or ""), name
