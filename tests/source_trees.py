"""The package's modules read and parsed once per test process, for the tests that walk every module's syntax
tree (the import direction, the layout, the engine's layers)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "symrmt"


@functools.cache
def package_modules() -> tuple:
    """``(path, lines, tree)`` of every ``.py`` file under ``symrmt/``, sorted by path."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        out.append((path, lines, ast.parse("\n".join(lines))))
    return tuple(out)


def tree_of(path: Path) -> ast.Module:
    """The syntax tree of one module of the package (from :func:`package_modules`)."""
    path = Path(path).resolve()
    for p, _, tree in package_modules():
        if p == path:
            return tree
    raise KeyError(path)
