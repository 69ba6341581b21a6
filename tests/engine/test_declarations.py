"""Declarations of the trace engine are a law and nothing more: a factor or transpose in a declaration
is refused, a factor written in the expression is honoured.
"""

import json

import pytest

from symrmt.engine import Model
from symrmt.errors import ParameterError
from tests.cli_helpers import _run, _no_result, _one_line


def _trace(capsys, expr, matrices, at, dims=("p=c*n",), extra=()):
    argv = ["trace", expr, "--at", at, *extra]
    for m in matrices:
        argv += ["--matrix", m]
    for d in dims:
        argv += ["--dim", d]
    return _run(capsys, argv)


@pytest.mark.parametrize("expr, decl", [
    ("trace(Z.T*Z/n)", "Z=2*gaussian(p,n)"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n).T"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)*0"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)*1"),
    ("trace(Z.T*Z/n)", "Z=-gaussian(p,n)"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)/2"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,n)@gaussian(n,n)"),
    ("trace(Z.T*Z/n)", "Z=gaussian(p,gaussian(p,n))"),
    ("trace(G*G/n)", "G=3*goe(n)"),
    ("trace(G*G/n)", "G=goe(n).T"),
    ("trace(D)", "D=2*diag(p, (1, 4))"),
    ("trace(D)", "D=diag(p, (1, 4)).T"),
])
def test_a_factor_or_transpose_in_a_declaration_is_refused(capsys, expr, decl):
    code, out, err = _trace(capsys, expr, [decl], "c=1/2")
    assert code == 2 and _no_result(out)
    import re

    assert re.search("a declaration|the attribute '.T' is not allowed", _one_line(err))


@pytest.mark.parametrize("decl", ["K=kernel(relu, Z)*1000", "K=2*kernel(relu, Z)", "K=kernel(relu, Z).T",
                                  "K=kernel(relu, Z) + kernel(tanh, Z)"])
def test_a_factor_around_a_kernel_declaration_is_refused(capsys, decl):
    code, out, err = _trace(capsys, "trace(K*K)", ["Z=gaussian(p,n)", decl], "c=1/2")
    assert code == 2 and _no_result(out)
    _one_line(err)


def test_model_declare_refuses_a_factor():
    m = Model()
    m.dim("p", "c*n")
    with pytest.raises(ParameterError, match="write a factor"):
        m.declare("Z=2*gaussian(p,n)")
    assert "Z" not in m.matrices  # refused before anything is declared
    m.declare("Z=gaussian(p,n)")


@pytest.mark.parametrize("expr, matrices, dims, want", [
    ("trace((2*Z).T*(2*Z)/n)", ["Z=gaussian(p,n)"], ["p=c*n"], 2.0),  # 4 c at c = 1/2
    ("trace(Z.T*Z/n)", ["Z=gaussian(n,p)"], ["p=c*n"], 1.0),          # Z n x p: tr(Z^T Z)/(p n) = 1
    ("gamma*trace((3*G)*(3*G)/n)", ["G=goe(n)"], [], 9.0),            # 9 tr(G^2)/n^2 at gamma = 1
    ("trace((0*Z).T*Z/n)", ["Z=gaussian(p,n)"], ["p=c*n"], 0.0),
])
def test_the_factor_written_in_the_expression_is_honoured(capsys, expr, matrices, dims, want):
    at = "c=1/2" if dims else "gamma=1"
    code, out, err = _trace(capsys, expr, matrices, at, dims=dims, extra=["--json"])
    if want == 0.0:  # an identically zero expression is refused, never printed as a number
        assert code == 2, err
        return
    assert code == 0, err
    assert abs(json.loads(out)["value"] - want) <= 1e-12 * want
