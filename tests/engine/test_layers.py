"""The engine's layers: every import of a module of ``symrmt.engine`` -- at the top or inside a
function -- goes to its own layer or a lower one, as the package docstring lists them, and no module of
the engine imports a lazy name of the package (which loads the facade ``symrmt.engine.model``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import symrmt.engine
from tests.source_trees import tree_of

ENGINE = Path(__file__).resolve().parents[2] / "symrmt" / "engine"

#: edges known to point up (none: each one found is cut, not listed here)
PENDING: set = set()


def _layers() -> dict:
    doc = symrmt.engine.__doc__
    items = re.split(r"\n(?=\d+\. )", doc.split("**Layers.**", 1)[1].split("\n\n", 2)[1])
    out = {}
    for k, item in enumerate(items):
        assert item.startswith(f"{k + 1}. "), item
        for name in re.findall(r":mod:`~symrmt\.engine\.([\w.]+)`", item.split(" -- ", 1)[1]):
            assert name not in out, f"{name} is listed twice"
            out[name] = k
    # a subpackage named whole (``laws``) places every module in it that is not listed by itself
    for pkg in [name for name in out if (ENGINE / name.replace(".", "/")).is_dir()]:
        k = out.pop(pkg)
        for module in _modules():
            if module.startswith(pkg + ".") and module not in out:
                out[module] = k
    return out


def _modules() -> set:
    """The engine's modules, dotted below the package (``plan``, ``reduce.plan``); no ``__init__``."""
    return {".".join(p.relative_to(ENGINE).with_suffix("").parts) for p in ENGINE.rglob("*.py")
            if p.name != "__init__.py" and "__pycache__" not in p.parts}


def _imports(module: str) -> set:
    mods = _modules()
    out = set()
    path = ENGINE.joinpath(*module.split(".")).with_suffix(".py")
    for node in ast.walk(tree_of(path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("symrmt.engine"):
            pkg = node.module[len("symrmt.engine."):] if node.module != "symrmt.engine" else ""
            for a in node.names:
                sub = f"{pkg}.{a.name}" if pkg else a.name
                if sub in mods:
                    out.add(sub)
                elif pkg in mods:
                    out.add(pkg)
                elif not pkg:
                    out.add("<the package's lazy names>")
        elif isinstance(node, ast.Import):
            out |= {a.name[len("symrmt.engine."):] for a in node.names
                    if a.name.startswith("symrmt.engine.") and a.name[len("symrmt.engine."):] in mods}
    return out - {module}


def test_every_module_of_the_engine_is_in_one_layer():
    modules = _modules()
    listed = set(_layers())
    assert not modules - listed, f"modules in no layer (place them in symrmt/engine/__init__.py): {modules - listed}"
    assert not listed - modules, f"layers list modules that do not exist: {listed - modules}"


def test_every_import_goes_to_the_same_layer_or_below():
    layer = _layers()
    up = []
    for module in sorted(layer):
        for target in sorted(_imports(module)):
            if target not in layer or layer[target] > layer[module]:
                if (module, target) not in PENDING:
                    up.append(f"{module} -> {target}")
    assert not up, f"imports that point up the engine's layers: {up}"
