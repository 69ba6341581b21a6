"""Candidate formulas of ``symrmt check``: LaTeX and .py candidates are read through the restricted
parser, and caps are refused before any work.
"""

from __future__ import annotations

import os

import pytest

from symrmt.errors import ParameterError
from symrmt.parsing import ParseLimitError
from tests.cli_helpers import _run, _no_result, _one_line, cli, _one_line_refusal


def _has_latex():
    try:
        import antlr4  # noqa: F401
        from sympy.parsing.latex import parse_latex

        parse_latex("c")
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.skipif(not _has_latex(), reason="needs antlr4-python3-runtime 4.11")
@pytest.mark.parametrize("tex, name", [
    (r"\frac{1-c}{1+s} + \print(c)", "print"),
    (r"\exec(\chr(99))", "exec"),
    (r"\input(c)", "input"),
    (r"\exit(c)", "exit"),
    (r"f(c)", "f"),
    (r"\sum_{k=1}^{10^9} k", "Sum"),
    (r"\int_0^1 c dc", "Integral"),
])
def test_latex_functions_are_whitelisted(tex, name, capsys):
    from symrmt.check import parse_candidate

    with pytest.raises(ParameterError, match=f"unknown function '{name}'"):
        parse_candidate("E_RR0", tex, syntax="latex")
    assert capsys.readouterr().out == ""  # nothing was printed by the candidate


@pytest.mark.skipif(not _has_latex(), reason="needs antlr4-python3-runtime 4.11")
def test_latex_tower_refused():
    from symrmt.check import parse_candidate

    with pytest.raises(ParseLimitError, match="exponent tower.*limit 1000"):
        parse_candidate("E_RR0", r"10^{10^{10}}", syntax="latex")


def test_where_huge_literal():
    from symrmt.check import parse_where

    with pytest.raises(ParseLimitError, match="limit 1000"):
        parse_where("c<1e999999999")


@pytest.mark.parametrize("line", ["from sympy import sqrt as exp", "import sympy as exp", "from math import *",
                                  "from sympy import Symbol", "import numpy as c"])
def test_a_candidate_file_import_that_would_change_a_name_is_refused(capsys, tmp_path, line):
    path = tmp_path / "cand.py"
    path.write_text(line + "\ncandidate = exp(c)\n")
    code, out, err = _run(capsys, ["check", "E_RR0", str(path)])
    assert code == 2 and _no_result(out)
    assert "not executed" in _one_line(err)


def test_a_candidate_file_may_import_the_language_functions():
    import tempfile

    from symrmt.check.candidate import parse_candidate

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cand.py")
        with open(path, "w") as fh:
            fh.write("import sympy\nimport sympy as sp\nfrom sympy import sqrt, pi\nE_RR0 = (1 - c)/2\n")
        lhs, _ = parse_candidate("E_RR0", path)
    assert str(lhs) == "1/2 - c/2"


@pytest.mark.slow
@pytest.mark.parametrize("args,needle", [
    (("E_RR0", "(1-c)/(1+snr)", "--points", "100000000"), "MAX_POINTS"),
    (("E_RR0", "exp(exp(exp(exp(c))))"), "MAX_TOWER"),
    (("E_RR0", "c**c**c**c**c"), "MAX_TOWER"),
    (("m", "gamma*m**1000 + (gamma + c - 1)*m = 1", "--kind", "equation"), "MAX_DEGREE"),
])
def test_check_refuses_before_work(args, needle):
    p = cli("check", *args)
    _one_line_refusal(p, needle)
