"""Every derivation runs and asserts in quick mode; ``symrmt latex`` output is well formed."""

import importlib.util
import re

import pytest

from symrmt.cli.app import LATEX_RESULTS, latex_of, main
from symrmt.derivations import DERIVATIONS, load_module

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")


def _available(name):
    return importlib.util.find_spec(f"symrmt.derivations.{name}") is not None


#: derivations whose quick mode another test file runs point by point (the same checks, one test id each)
RUN_ELSEWHERE = {"attention_grid": "tests/models/attention/test_limit_vs_simulation.py::test_attention_grid"}


@pytest.mark.parametrize("name", [n for n in DERIVATIONS if n not in RUN_ELSEWHERE])
def test_derivation_quick(name, capsys):
    if not _available(name):
        pytest.fail(f"derivation module {name} is listed but missing")
    assert load_module(name).main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out


def _balanced(tex: str) -> bool:
    envs = re.findall(r"\\(begin|end)\{([a-z*]+)\}", tex)
    stack = []
    for kind, env in envs:
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            return False
    if stack:
        return False
    depth = 0
    for ch in tex.replace(r"\{", "").replace(r"\}", ""):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.parametrize("result", sorted(LATEX_RESULTS))
def test_latex_is_well_formed(result):
    tex = latex_of(result, standalone=True)
    assert tex.startswith("\\documentclass")
    assert "\\begin{align}" in tex and "\\end{align}" in tex
    assert _balanced(tex), tex
    # no SymPy internals: Dummy indices, Python reprs
    assert not re.search(r"_\d{3,}|Dummy|Symbol\(|Matrix\(|\*\*", tex), tex


def test_latex_cli_writes_file(tmp_path):
    out = tmp_path / "ridge.tex"
    assert main(["latex", "ridge", "--standalone", "--out", str(out)]) == 0
    assert _balanced(out.read_text())


def test_latex_unknown_result_is_bad_input(capsys):
    assert main(["latex", "nonsense"]) == 2


def test_verify_only_one_derivation_json(capsys):
    import json

    assert main(["verify", "--only", "ridge", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["failed"] == 0 and data["passed"] >= 10
    assert {"name", "kind", "passed", "measured", "derivation"} <= set(data["checks"][0])


def test_derivations_run_elsewhere_are_listed():
    assert set(RUN_ELSEWHERE) <= set(DERIVATIONS)
