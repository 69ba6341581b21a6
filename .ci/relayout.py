#!/usr/bin/env python3
"""The package layout by feature (issue 18): the module moves and the import rewrite.

``python .ci/relayout.py --move`` performs the moves with ``git mv``; ``python .ci/relayout.py``
(no flag) rewrites every import and every cited module path in symrmt/, tests/, derivations/,
benchmarks/, docs/, README.md and pyproject.toml from the old paths to the new ones;
``python .ci/relayout.py FILE...`` rewrites only those files (a file written against the old layout,
after a merge).  Run it on old-layout text only: ``symrmt.cli`` and ``symrmt.bench`` were modules and
are now packages, so a bare ``symrmt.cli`` is read as the old module (now ``symrmt.cli.app``).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: old module -> new module (a package's ``__init__`` is the package name)
MOVES = {
    # hermite: the exact Gaussian engine, quadrature, Nonlinearity
    "symrmt.symbolic.hermite": "symrmt.hermite",
    "symrmt.symbolic.variable": "symrmt.hermite.variable",
    "symrmt.symbolic.gaussian": "symrmt.hermite.gaussian",
    "symrmt.numeric.quadrature": "symrmt.hermite.quadrature",
    "symrmt.symbolic.nonlinearity": "symrmt.hermite.nonlinearity",
    "symrmt.symbolic.nonlinearity_parser": "symrmt.hermite.parser",
    # codegen: the one compile step from SymPy to mpmath/NumPy, and its disk cache
    "symrmt.numeric.compile": "symrmt.codegen.compile",
    "symrmt.numeric.codecache": "symrmt.codegen.codecache",
    # engine: the trace engine
    "symrmt.engine": "symrmt.engine.model",
    "symrmt.engine_io": "symrmt.engine.io",
    "symrmt.symbolic.engine_base": "symrmt.engine.base",
    "symrmt.symbolic.engine_nodes": "symrmt.engine.nodes",
    "symrmt.symbolic.engine_model": "symrmt.engine.declarations",
    "symrmt.symbolic.engine_tree": "symrmt.engine.tree",
    "symrmt.symbolic.engine_plan": "symrmt.engine.plan",
    "symrmt.symbolic.engine_vectors": "symrmt.engine.vectors",
    "symrmt.symbolic.engine_kernel": "symrmt.engine.nonlinear_kernel",
    "symrmt.symbolic.engine_kernel_signal": "symrmt.engine.nonlinear_kernel",
    "symrmt.symbolic.linearize": "symrmt.engine.linearize",
    "symrmt.symbolic.blockfp": "symrmt.engine.blockfp",
    "symrmt.symbolic.woodbury_qf": "symrmt.engine.woodbury_qf",
    "symrmt.symbolic.atomsums": "symrmt.engine.atomsums",
    "symrmt.symbolic.hermitize": "symrmt.engine.hermitize",
    "symrmt.numeric.hermitize": "symrmt.engine.hermitize_solve",
    "symrmt.numeric.trace_solver": "symrmt.engine.solver",
    "symrmt.numeric.trace_certify": "symrmt.engine.certify",
    "symrmt.numeric.trace_batch": "symrmt.engine.batch",
    "symrmt.numeric.qf_solver": "symrmt.engine.qf_solver",
    "symrmt.numeric.atom_solver": "symrmt.engine.atom_solver",
    "symrmt.numeric.continuation": "symrmt.engine.continuation",
    "symrmt.numeric.complex_limit": "symrmt.engine.complex_limit",
    "symrmt.numeric.pencil_check": "symrmt.engine.pencil_check",
    "symrmt.numeric.density": "symrmt.engine.density_solver",
    "symrmt.density": "symrmt.engine.density",
    "symrmt.trace_sweep": "symrmt.engine.sweep",
    "symrmt.simulation.trace_sim": "symrmt.engine.simulate",
    "symrmt.simulation.trace_trials": "symrmt.engine.trials",
    "symrmt.simulation.density_sim": "symrmt.engine.density_sim",
    # models/attention: the paper's model
    "symrmt.models.attention": "symrmt.models.attention.engine_model",
    "symrmt.symbolic.attention": "symrmt.models.attention.equations",
    "symrmt.symbolic.closed_forms": "symrmt.models.attention.closed_forms",
    "symrmt.symbolic.closed_forms.noise_only": "symrmt.models.attention.closed_forms.noise_only",
    "symrmt.symbolic.closed_forms.noise_only_data": "symrmt.models.attention.closed_forms.noise_only_data",
    "symrmt.symbolic.closed_forms.ridgeless": "symrmt.models.attention.closed_forms.ridgeless",
    "symrmt.numeric.solver": "symrmt.models.attention.solver",
    "symrmt.numeric.theory": "symrmt.models.attention.theory",
    "symrmt.numeric.fast": "symrmt.models.attention.fast",
    "symrmt.numeric.batch": "symrmt.models.attention.batch",
    "symrmt.numeric.prove": "symrmt.models.attention.prove",
    "symrmt.numeric.prove_chain": "symrmt.engine.prove_chain",
    "symrmt.simulation.montecarlo": "symrmt.models.attention.montecarlo",
    "symrmt.simulation.trials": "symrmt.models.attention.trials",
    "symrmt.api": "symrmt.models.attention.api",
    "symrmt.sweeps": "symrmt.models.attention.sweeps",
    "symrmt.sweeps_fast": "symrmt.models.attention.sweeps_fast",
    "symrmt.boundary": "symrmt.models.attention.boundary",
    "symrmt.geometry": "symrmt.models.attention.geometry",
    "symrmt.geometry_io": "symrmt.models.attention.geometry_io",
    "symrmt.params": "symrmt.models.attention.params",
    "symrmt.pretrained": "symrmt.models.attention.pretrained",
    # models/softmax: the second model (its kernel; softmax_limit is in models.softmax.limit, RELOCATE)
    "symrmt.softmax": "symrmt.models.softmax.kernel",
    # simulation: the executor, store, scheduler, BLAS threads
    "symrmt.blas_threads": "symrmt.simulation.blas_threads",
    # derivations: the recorded checks and their proved re-run
    "symrmt.checks": "symrmt.derivations.checklist",
    "symrmt.prove_checks": "symrmt.derivations.proved",
    # cli
    "symrmt.cli": "symrmt.cli.app",
    "symrmt.cli_common": "symrmt.cli.common",
    "symrmt.cli_density": "symrmt.cli.density",
    "symrmt.cli_model": "symrmt.cli.model",
    "symrmt.cli_sweeps": "symrmt.cli.sweeps",
    "symrmt.cli_tools": "symrmt.cli.tools",
    "symrmt.cli_trace": "symrmt.cli.trace",
    "symrmt.cli_trace_sweep": "symrmt.cli.trace_sweep",
    # bench
    "symrmt.bench": "symrmt.bench.run",
    "symrmt.bench_fast": "symrmt.bench.fast",
    "symrmt.bench_prove": "symrmt.bench.prove",
    "symrmt.bench_engine": "symrmt.bench.engine",
    "symrmt.bench_density": "symrmt.bench.density",
}

#: names that moved to another module (after the moves): (module or "*", name) -> defining module
_GEOMETRY = ("ldl_pivoted", "PSD_ROUNDING", "project_psd", "is_psd", "exact_rank", "Geometry", "LowRankGeometry",
             "as_low_rank")
_COMPILE = ("SAFE_BUILTINS", "TARGETS", "Compiled", "closed_form_phi", "compile_expr", "compile_recipe",
            "fixed_point_fjg", "fixed_point_functions", "ridge_function", "woodbury_D_function")
RELOCATE = {
    **{("*", n): "symrmt.errors" for n in ("ParameterError", "SolverError", "ConvergenceError", "BranchError",
                                          "PrecisionError", "SymrmtError")},
    **{("symrmt.models.attention.params", n): "symrmt.models.attention.geometry" for n in _GEOMETRY},
    **{("symrmt.models.attention.solver", n): "symrmt.codegen.compile" for n in _COMPILE},
    # later splits: the exact PSD checks, the ball arithmetic, the memory check, the table helpers
    **{("symrmt.models.attention.geometry", n): "symrmt.psd" for n in _GEOMETRY[:5]},
    **{("symrmt.models.attention.prove", n): "symrmt.arb" for n in (
        "INSTALL", "GUARD_BITS", "ProofError", "ProveUnavailable", "require_flint", "working_bits", "bits_for", "to_arb",
        "sympy_ball", "arb_function", "ball_parts", "ball_json", "ball_text", "check_radius", "relative_ok", "krawczyk")},
    ("symrmt.models.attention.prove", "prove_trace"): "symrmt.engine.prove",
    **{("symrmt.models.attention.prove", n): "symrmt.engine.prove" for n in (
        "prove_complex_trace", "CHAIN_DEFAULT_UNKNOWNS", "TraceBall")},
    **{("symrmt.models.attention.prove", n): "symrmt.arb" for n in (
        "complex_ok", "complex_ball_json", "complex_ball_text", "_mat")},
    ("symrmt.models.attention.prove", "hermite_ball"): "symrmt.hermite.balls",
    ("symrmt.models.attention.prove", "prove_hermite_report"): "symrmt.hermite.balls",
    ("symrmt.models.attention.montecarlo", "check_memory_bytes"): "symrmt.simulation.memory",
    ("symrmt.models.attention.montecarlo", "TRIAL_BOOKKEEPING"): "symrmt.simulation.memory",
    ("symrmt.models.attention.sweeps", "point_geometry"): "symrmt.models.attention.geometry",
    **{("symrmt.results", n): "symrmt.table" for n in (
        "text_table", "html_table", "latex_tabular", "latex_array", "latex_escape", "math_text", "digit_lines",
        "grouped_digits", "need_pandas", "LATEX_WIDE_DIGITS", "param_text", "param_column", "decimal_text", "is_long",
        "geometry_text")},
    ("symrmt.results", "Comparison"): "symrmt.comparison",
    # the one-way layers of issue 18: softmax's limit apart from its kernel, f's coercion apart from the api
    ("symrmt.models.softmax.kernel", "softmax_limit"): "symrmt.models.softmax.limit",
    ("symrmt.models.attention.api", "SimulationF"): "symrmt.models.attention.kernel_f",
    **{("symrmt.parsing.expressions", n): "symrmt.parsing.numbers" for n in (
        "parse_number", "plain_fraction", "number_to_fraction", "split_equation")},
    ("symrmt.parsing.expressions", "literal_fraction"): "symrmt.parsing.literals",
    **{("symrmt.hermite.nonlinearity", n): "symrmt.hermite.presets" for n in (
        "PRESETS", "CENTER_NUMERICALLY", "check_order", "check_dps", "GUARD_ALLOWANCE")},
    **{("symrmt.models.attention.theory", n): "symrmt.models.attention.hermite_data" for n in (
        "hermite_inputs", "scaled_nonlinearity")},
    ("symrmt.results", "Extrapolation"): "symrmt.comparison",
}
#: private helpers made public when they moved (old name -> new name); apply by hand where a file uses them
RENAMED = {"symrmt.results._fstr": "symrmt.table.float_text", "symrmt.results._nstr": "symrmt.table.mp_text",
           "symrmt.results._floats": "symrmt.table.float_array", "symrmt.results._gram_items": "symrmt.table.gram_items",
           "symrmt.results._se_str": "symrmt.table.se_text", "symrmt.numeric.prove._arb_checked": "symrmt.arb.arb_checked",
           "symrmt.numeric.prove._mat_solve": "symrmt.arb.mat_solve",
           "symrmt.simulation.montecarlo._weights_from_geometry":
               "symrmt.models.attention.sampling.weights_from_geometry",
           "symrmt.simulation.montecarlo._check_int": "symrmt.models.attention.params.check_int",
           "symrmt.api._picklable": "symrmt.models.attention.kernel_f.simulation_f",
           "symrmt.numeric.theory._guard": "symrmt.models.attention.theory.guard_digits",
           "symrmt.numeric.theory._hermite_at_least": "symrmt.models.attention.hermite_data.hermite_at_least",
           "symrmt.parsing.expressions._short": "symrmt.parsing.literals.shorten"}

#: files another branch edits at the same time: imports inside their functions are left alone
FROZEN_BODIES = {"symrmt/models/attention/solver.py", "symrmt/engine/solver.py", "symrmt/models/attention/batch.py",
                 "symrmt/models/attention/theory.py", "symrmt/engine/certify.py", "symrmt/engine/atom_solver.py",
                 "symrmt/engine/continuation.py", "symrmt/models/attention/closed_forms/noise_only.py"}

#: packages that stay importable and keep their own public names (``from P import name`` stays):
#: P -> the names it exports (all other names resolve through MOVES[P])
KEEP = {
    "symrmt.engine": None,  # filled from engine/model.py's __all__
    "symrmt.models.attention": {"attention_model", "E_A", "E_RR", "at_from_gram"},
    "symrmt.hermite": None,  # filled from hermite/__init__.py's __all__
}

#: old packages that disappear: their star-imported names came from this module
STAR = {
    "symrmt.numeric": "symrmt.numeric.solver",
    "symrmt.symbolic": "symrmt.symbolic.attention",
    "symrmt.simulation": "symrmt.simulation.montecarlo",
}

#: new packages (an ``__init__.py`` is written for each where the move leaves none)
NEW_PACKAGES = ["symrmt.hermite", "symrmt.codegen", "symrmt.engine", "symrmt.models.attention", "symrmt.cli",
                "symrmt.bench"]


def path_of(mod: str, package: bool = False) -> Path:
    p = ROOT / Path(*mod.split("."))
    return p / "__init__.py" if package or p.is_dir() else p.with_suffix(".py")


def old_file(mod: str) -> Path:
    p = ROOT / Path(*mod.split("."))
    if (p / "__init__.py").exists() and not p.with_suffix(".py").exists():
        return p / "__init__.py"
    return p.with_suffix(".py")


def move() -> None:
    todo = []
    for old, new in MOVES.items():
        src = old_file(old)
        if old == "symrmt.symbolic.closed_forms":
            src = ROOT / "symrmt/symbolic/closed_forms/__init__.py"
            dst = ROOT / "symrmt/models/attention/closed_forms/__init__.py"
        elif new in ("symrmt.hermite",):
            dst = ROOT / "symrmt/hermite/__init__.py"
        else:
            dst = ROOT / Path(*new.split(".")).with_suffix(".py")
        todo.append((src, dst))
    for src, dst in todo:
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(src.relative_to(ROOT)), str(dst.relative_to(ROOT))], cwd=ROOT, check=True)


def public_names(file: Path) -> set:
    tree = ast.parse(file.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


OLD_MODULES = set(MOVES) | set(STAR)
REV = {new: old for old, new in MOVES.items()}


def new_module(mod: str) -> str:
    return MOVES.get(mod, mod)


def target_of(mod: str, name: str) -> tuple[str, str]:
    """(module to import from, name to import) for ``from mod import name`` in the new layout."""
    t, n = _target_of(mod, name)
    if t.startswith("symrmt"):
        t = RELOCATE.get((t, n)) or RELOCATE.get(("*", n)) or t
    return t, n


def _target_of(mod: str, name: str) -> tuple[str, str]:
    sub = f"{mod}.{name}"
    if sub in KEEP or (ROOT / Path(*sub.split("."))).with_suffix(".py").exists():
        return mod, name
    if sub in MOVES:  # a module
        new = MOVES[sub]
        parent, _, last = new.rpartition(".")
        return parent, last
    if mod in KEEP and name in KEEP[mod]:
        return mod, name
    if mod in STAR:
        return new_module(STAR[mod]), name
    return new_module(mod), name


def absolute(cur_mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = cur_mod if is_pkg else cur_mod.rpartition(".")[0]
    base = pkg.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def rewrite_imports(text: str, cur_mod: str, is_pkg: bool, frozen: bool = False) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits = []
    nodes = tree.body if frozen else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            mod = absolute(cur_mod, is_pkg, node)
            if not mod.startswith("symrmt"):
                continue
            groups: dict[str, list[str]] = {}
            changed = bool(node.level)
            for a in node.names:
                if a.name == "*":
                    t, n = new_module(STAR.get(mod, mod)), "*"
                else:
                    t, n = target_of(mod, a.name)
                bind = a.asname or a.name
                if t != mod or n != a.name:
                    changed = True
                groups.setdefault(t, []).append(n if (bind == n or n == "*") else f"{n} as {bind}")
            if not changed:
                continue
            edits.append((node, [f"from {t} import {', '.join(ns)}" for t, ns in groups.items()]))
        elif isinstance(node, ast.Import):
            out, changed = [], False
            for a in node.names:
                if a.name in OLD_MODULES and a.name not in KEEP:
                    new = new_module(STAR.get(a.name, a.name)) if a.name in STAR else new_module(a.name)
                    changed = True
                    out.append(f"import {new}" + (f" as {a.asname}" if a.asname else ""))
                else:
                    out.append(f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
            if changed:
                edits.append((node, out))
    for node, stmts in sorted(edits, key=lambda e: -e[0].lineno):
        first, last = node.lineno - 1, node.end_lineno - 1
        indent = re.match(r"\s*", lines[first]).group(0)
        head = lines[first][: node.col_offset]
        rest = lines[last][node.end_col_offset:].rstrip("\n")
        fm = re.search(r"(#.*)$", lines[first].rstrip("\n"))
        if fm and last > first:
            rest = "  " + fm.group(1) + rest
        new = [(head if i == 0 else indent) + s for i, s in enumerate(stmts)]
        new[-1] += rest
        text_new = "\n".join(new) + ("\n" if lines[last].endswith("\n") else "")
        lines[first:last + 1] = [text_new]
    return "".join(lines)


def dotted_map():
    pairs = []
    for old, new in MOVES.items():
        if old in KEEP:
            continue  # the public path symrmt.engine (and the like) stays
        pairs.append((old, new))
        pairs.append((old.replace(".", "/") + ".py", path_of_text(new)))
    pairs.append(("symrmt/engine.py", "symrmt/engine/model.py"))
    pairs.append(("symrmt/models/attention/__init__.py", "symrmt/models/attention/engine_model.py"))
    pairs.sort(key=lambda p: -len(p[0]))
    return pairs


def path_of_text(new: str) -> str:
    if new in ("symrmt.hermite",):
        return "symrmt/hermite/__init__.py"
    if new == "symrmt.models.attention.closed_forms":
        return "symrmt/models/attention/closed_forms/__init__.py"
    return new.replace(".", "/") + ".py"


def rewrite_text(text: str, pairs) -> str:
    table = dict(pairs)
    alts = []
    for old, new in pairs:
        guard = ""
        if new.startswith(old + "."):  # symrmt.cli -> symrmt.cli.main: leave the new package's own paths alone
            subs = {m.rpartition(".")[2] for m in MOVES.values() if m.startswith(old + ".")}
            subs |= {f.stem for f in (ROOT / Path(*old.split("."))).glob("*.py")}  # modules added since
            subs = sorted(subs)
            guard = r"(?!\.(?:" + "|".join(subs) + r")\b)(?!\s+import\b)"  # imports: the import pass
        alts.append(re.escape(old) + guard)
    pattern = r"(?<![\w./])(" + "|".join(alts) + r")(?![\w])"
    return re.sub(pattern, lambda m: table[m.group(1)], text)


def files():
    for top in ["symrmt", "tests", "derivations", "benchmarks", "docs"]:
        for p in (ROOT / top).rglob("*"):
            if p.suffix in (".py", ".md", ".rst", ".txt", ".ipynb", ".toml", ".json") and p.is_file():
                if "results" in p.parts and top == "benchmarks":
                    continue
                yield p
    yield ROOT / "README.md"
    yield ROOT / "pyproject.toml"


def module_name(p: Path) -> tuple[str, bool]:
    rel = p.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def main() -> None:
    if "--move" in sys.argv:
        move()
        return
    eng = ROOT / "symrmt/engine/model.py"
    KEEP["symrmt.engine"] = public_names(eng) if eng.exists() else set()
    her = ROOT / "symrmt/hermite/__init__.py"
    KEEP["symrmt.hermite"] = public_names(her) if her.exists() else set()
    pairs = dotted_map()
    chosen = [Path(a).resolve() for a in sys.argv[1:] if not a.startswith("-")]
    for p in chosen or files():
        text = p.read_text()
        new = text
        if p.suffix == ".py":
            name, is_pkg = module_name(p)
            old = REV.get(name, name)
            old_pkg = old in ("symrmt.symbolic.closed_forms", "symrmt.models.attention") or (old == name and is_pkg)
            new = rewrite_text(new, pairs)
            new = rewrite_imports(new, old, old_pkg, str(p.relative_to(ROOT)) in FROZEN_BODIES)
        else:
            new = rewrite_text(new, pairs)
        if new != text:
            p.write_text(new)


if __name__ == "__main__":
    main()
