"""What the trace engine reads (``Model``, ``bind``, ``symrmt trace``): values at the point, dimension
ratios, diagonal laws and files; bad input is refused in one line, before any solve.
"""

import json
from decimal import Decimal

import mpmath
import numpy as np
import pytest
import sympy as sp

import symrmt
from symrmt.cli.app import main
from symrmt.engine import Model, ModelError, bind
from symrmt.errors import BranchError, ParameterError
from symrmt.parsing import ParseLimitError
from tests.cli_helpers import _run, _no_result, _one_line

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"


def _trace(capsys, expr, matrices, at, dims=("p=c*n",), extra=()):
    argv = ["trace", expr, "--at", at, *extra]
    for m in matrices:
        argv += ["--matrix", m]
    for d in dims:
        argv += ["--dim", d]
    return _run(capsys, argv)


AT = {"c": "1/2", "gamma": "1/5"}


def model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


def _cli_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


MP_DECL = ["--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n"]


def _mp_root(c, g):
    """The Marchenko-Pastur Stieltjes transform: the positive root of g m^2 + (g + c - 1) m - 1 (here, in mpmath)."""
    b = g + c - 1
    return (-b + mpmath.sqrt(b * b + 4 * g)) / (2 * g)


def _silverstein(c, g, values, weights):
    """m = trace(inv(Z.T D Z/n + g I)) from 1/m = g + c sum_a w_a v_a/(1 + v_a m), solved here."""
    def f(m):
        return 1 / m - g - c * mpmath.fsum(w * v / (1 + v * m) for v, w in zip(values, weights))
    return mpmath.findroot(f, 1 / g)


@pytest.mark.parametrize("dim, at", [("p=(c-1)*n", "c=1/2"), ("p=(c-1)**2*n", "c=1"), ("p=(1-c)*n", "c=1"),
                                     ("p=sqrt(c-1)*n", "c=1/2"), ("p=1/(c-1)*n", "c=1")])
@pytest.mark.parametrize("simulate", [False, True])
def test_a_non_positive_ratio_at_the_point_is_refused(capsys, dim, at, simulate):
    extra = ["--simulate", "--n", "16", "--trials", "2"] if simulate else []
    code, out, err = _trace(capsys, MP, ["Z=gaussian(p,n)"], at + ", gamma=1", dims=[dim], extra=extra)
    assert code == 2 and _no_result(out)
    assert "not a positive real number" in _one_line(err)


def test_a_square_root_in_a_dimension_ratio_is_read():
    m = Model()
    m.dim("p", "sqrt(c)*n")
    m.gaussian("Z", "p", "n")
    assert float(m.limit("trace(Z.T*Z/n)", at={"c": "1/4"}).value) == 0.5  # tr(Z^T Z)/n^2 -> p/n = sqrt(c)


def test_bind_refuses_a_non_positive_ratio():
    m = Model()
    m.dim("p", "(c-1)*n")
    m.gaussian("Z", "p", "n")
    with pytest.raises(ModelError, match="not a positive real number"):
        bind(m.parse("trace(Z.T*Z/n)"), {"c": "1/2"}, 16)
    with pytest.raises(ModelError, match="not a positive real number"):
        m.limit("trace(Z.T*Z/n)", at={"c": "1/2"})


@pytest.mark.parametrize("expr, matrices, dims, at, code_want", [
    ("gamma/0", [], [], "gamma=1", 2),
    ("trace(inv(Z.T*Z/n + gamma/0*I(n)))", ["Z=gaussian(p,n)"], ["p=c*n"], "c=1/2, gamma=1", 2),
    ("sqrt(-1) + gamma", [], [], "gamma=1", 3),
    ("trace(inv(Z.T*Z/n + sqrt(-1)*I(n)))", ["Z=gaussian(n,n)"], [], "gamma=1", None),
    ("trace(inv(Z.T*Z/n + sqrt(gamma-2)*I(n)))", ["Z=gaussian(n,n)"], [], "gamma=1", 3),
    ("trace(inv(Z.T*Z/n + 1/(gamma-1)*I(n)))", ["Z=gaussian(n,n)"], [], "gamma=1", 3),
    ("trace(inv(D + gamma*I(p)))", ["D=diag(p, (sqrt(-2), 4))"], ["p=c*n"], "c=1, gamma=1", 2),
    ("trace(inv(c*I(n)-c*I(n)))", [], [], "c=1", 2),
])
def test_bad_expressions_fail_in_one_line(capsys, expr, matrices, dims, at, code_want):
    code, out, err = _trace(capsys, expr, matrices, at, dims=dims)
    assert code in (2, 3) and _no_result(out)
    if code_want is not None:
        assert code == code_want, err
    _one_line(err)


@pytest.mark.parametrize("ratio", [None, 1.5, [1], {"c": 1}, True])
def test_model_dim_of_the_wrong_type(ratio):
    with pytest.raises(ModelError, match="size of q"):
        Model().dim("q", ratio)


@pytest.mark.parametrize("expr", ["trace(inv(Z.T*Z/n + gamma**10**10*I(n)))",
                                  "trace(inv(Z.T*Z/n + 10**10**10*I(n)))",
                                  "trace(inv(Z.T*Z/n + gamma**(2**600)*I(n)))"])
def test_exponent_towers_on_engine_constants_refused_by_the_exponent_limit(expr):
    # the engine wraps numbers in its own constant nodes; the power limits must still see them
    with pytest.raises(ParseLimitError, match="exponent tower"):
        model().parse(expr)


def test_constant_beyond_float64_refused_before_the_pencil_self_test():
    with pytest.raises(ParameterError, match="float64 range"):
        model().limit("trace(inv(Z.T*Z/n + 99**999*I(n)))", at={"c": "1/2"})


def test_complex_limit_is_refused_not_printed():
    with pytest.raises(BranchError, match="not real"):
        model().limit("sqrt(-trace(Z.T*Z/n))", at={"c": "1/2"})


def test_gamma_zero_infinite_bound_is_vacuous():
    # tr (Z^T Z/n)^{-1} with p = 2n tends to 1/(c - 1) = 1 (Marchenko-Pastur); the upper bound
    # 1/gamma is infinite at gamma = 0 and must not crash the branch check
    assert abs(float(model().limit(MP, at={"c": 2, "gamma": 0}).value) - 1.0) < 1e-13


@pytest.mark.parametrize("at, match", [([1, 2], "dict"), ({"c": "1/2", "gamma": 1, "gama": 1}, "unknown parameter gama"),
                                       ({"c": float("nan"), "gamma": 1}, "finite"), ({"c": True, "gamma": 1}, "bool")])
def test_bad_at_values(at, match):
    with pytest.raises(ParameterError, match=match):
        model().limit(MP, at=at)


def test_numpy_and_decimal_values_and_digits_are_read_exactly():
    m = model()
    ref = m.limit(MP, at={"c": Decimal("0.5"), "gamma": np.float64(0.2)}, digits=np.int64(20))
    assert str(ref) == str(m.limit(MP, at=AT, digits=20))
    m.diag("D", "n", [Decimal("0.5"), np.int64(1)])


@pytest.mark.parametrize("values, match", [(range(10**6), r"at most \d+ atoms"), ([float("nan"), 1], "finite"),
                                           ([10**10000, 1], "digits")])
def test_diag_values(values, match):
    with pytest.raises(ParameterError, match=match):
        model().diag("D", "n", values)


def test_trace_simulation_memory_is_refused_before_the_limit(capsys):
    rc = main(["trace", MP, "--matrix", "Z=gaussian(p,n)", "--dim", "p=c*n", "--at", "c=1/2, gamma=1/5",
               "--simulate", "--n", "100000000"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "GiB" in err and "\n" not in err


def test_declared_but_unused_parameter_is_not_an_unknown_key():
    # c is declared by the dimension p even when the expression does not use p
    assert float(model().limit("trace(inv(gamma*I(n)))", at={"c": "1/2", "gamma": 2}).value) == 0.5


def test_engine_fixed_point_size_is_capped():
    """A matrix power whose pencil has 512 unknowns is refused before compiling, naming the limit."""
    from symrmt.engine.lang.node import ModelError

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    with pytest.raises(ModelError, match="512 unknowns, above the limit of 100"):
        m.limit(m.parse("trace(inv((Z.T*Z/n)**16 + I(n)))"), at={"c": "1/2"}, digits=15)


@pytest.mark.parametrize("text, value", [("sqrt(2)", lambda: mpmath.sqrt(2)), ("pi", lambda: mpmath.pi),
                                         ("E", lambda: mpmath.e), ("E-2", lambda: mpmath.e - 2),
                                         ("E - 2", lambda: mpmath.e - 2)])
def test_trace_at_takes_exact_irrationals(capsys, text, value):
    rc, out = _cli_json(capsys, ["trace", MP, *MP_DECL, "--at", f"c=1/2, gamma={text}", "--digits", "30",
                                 "--json"])
    assert rc == 0, out
    assert out["at"]["gamma"] == text  # shown as typed, not as a 1000-digit rounding
    with mpmath.workdps(50):
        ref = _mp_root(mpmath.mpf(1) / 2, value())
        assert abs(mpmath.mpf(out["value"]) - ref) <= abs(ref) * mpmath.mpf("1e-29")


def test_e_minus_2_parses_as_euler_minus_2():
    from symrmt.parsing import parse_number

    assert sp.simplify(parse_number("E-2", what="x") - (sp.E - 2)) == 0
    assert sp.simplify(parse_number("E+1", what="x") - (sp.E + 1)) == 0
    assert parse_number("1E-2", what="x") == sp.Rational(1, 100)  # a literal keeps its exponent


def test_bind_and_simulate_take_what_limit_takes():
    from symrmt.engine import Model, bind
    from symrmt.engine.simulate.monte_carlo import simulate_trace

    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    e = m.parse(MP)
    for g in ("sqrt(2)", sp.sqrt(2)):
        lim = m.limit(e, at={"c": "1/2", "gamma": g}, digits=20)
        sim = simulate_trace(bind(e, {"c": "1/2", "gamma": g}, 128), trials=4, seed=0, progress=False)
        # 4 se + 2% covers the finite-n bias of a resolvent trace at n = 128
        assert abs(sim["mean"] - float(lim.value)) <= 4 * sim["se"] + 0.02 * float(lim.value)
    with pytest.raises(symrmt.ParameterError, match="gamma"):
        bind(e, {"c": "1/2", "gamma": "x"}, 64)


def test_trace_diag_file_300_atoms(tmp_path, capsys):
    path = tmp_path / "law.npy"
    np.save(path, np.array([(50 + a) / 100 for a in range(300)]))
    rc, out = _cli_json(capsys, ["trace", "trace(inv(Z.T*D*Z/n + gamma*I(n)))", "--matrix", "Z=gaussian(p,n)",
                                 "--matrix", f"D=diag_file(p, {path})", "--dim", "p=c*n", "--at",
                                 "c=1/2, gamma=1/10", "--digits", "30", "--json"])
    assert rc == 0, out
    with mpmath.workdps(50):
        vals = [mpmath.mpf(50 + a) / 100 for a in range(300)]
        ref = _silverstein(mpmath.mpf(1) / 2, mpmath.mpf(1) / 10, vals, [mpmath.mpf(1) / 300] * 300)
        assert abs(mpmath.mpf(out["value"]) - ref) <= abs(ref) * mpmath.mpf("1e-29")


def test_diag_file_is_validated(tmp_path):
    from symrmt.engine.laws.diag_file import load_law

    def saved(name, arr, **kw):
        p = tmp_path / name
        np.save(p, arr, **kw)
        return p

    vals, ws = load_law(saved("ok.npy", np.array([[1.0, 2.0, 3.0], [0.5, 0.25, 0.25]])))
    assert sum(ws) == 1 and vals[0] == 1
    bad = [
        (saved("obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True), "without pickles"),
        (saved("shape.npy", np.ones((3, 3))), "shape"),
        (saved("sum.npy", np.array([[1.0, 2.0], [0.5, 0.6]])), "sum to"),
        (saved("neg.npy", np.array([[1.0, 2.0], [1.5, -0.5]])), "positive"),
        (saved("nan.npy", np.array([1.0, np.nan])), "finite"),
        (saved("many.npy", np.ones(4097)), "4096"),
        (saved("str.npy", np.array(["1", "2"])), "real numbers"),
    ]
    for path, msg in bad:
        with pytest.raises(symrmt.ParameterError, match=msg):
            load_law(path)
    with pytest.raises(symrmt.ParameterError, match="cannot read"):
        load_law(tmp_path / "missing.npy")
