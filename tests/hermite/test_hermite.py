"""Tests of symrmt.hermite: exact Hermite data, high-precision quadrature, input checks."""

import mpmath
import numpy as np
import pytest
import sympy as sp

from symrmt.hermite import PRESETS, T, NotExact, Nonlinearity, hermite_report, parse_f
from symrmt.errors import ParameterError
from symrmt.hermite.gaussian import smooth_pieces

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")


def _zero(expr):
    return sp.simplify(expr) == 0


# -- exact values (symbolic against symbolic: exact) ------------------------------


def test_erf_exact():
    nl = Nonlinearity("erf")
    assert _zero(nl.a(1) - 2 / sp.sqrt(3 * sp.pi))
    assert _zero(nl.nu - 2 / sp.pi * sp.asin(sp.Rational(2, 3)))
    assert nl.exact


def test_sin_and_centered_cos():
    assert _zero(Nonlinearity("sin").a(1) - sp.exp(-sp.Rational(1, 2)))
    cos = Nonlinearity("cos")
    assert cos.a(1) == 0
    assert _zero(cos.a(2) + sp.exp(-sp.Rational(1, 2)))  # E[cos ξ He_2] = -e^{-1/2}


def test_relu_centered():
    nl = Nonlinearity("relu")
    assert nl.a(0) == 0
    assert _zero(nl.a(1) - sp.Rational(1, 2))
    assert _zero(nl.nu - (sp.Rational(1, 2) - 1 / (2 * sp.pi)))


def test_gelu_exact_mean_and_a1():
    # the preset subtracts E[ξ Φ(ξ)] = 1/(2√π) exactly, so it constructs without center=True
    nl = Nonlinearity("gelu")
    assert _zero(nl.a(1) - sp.Rational(1, 2))
    assert nl.exact
    ref = mpmath.quad(lambda x: (x * mpmath.ncdf(x) - 1 / (2 * mpmath.sqrt(mpmath.pi))) ** 2 * mpmath.npdf(x), [-mpmath.inf, 0, mpmath.inf])
    assert abs(nl.nu_mpf(15) - ref) < 1e-14


def test_poly2():
    nl = Nonlinearity("poly2")
    assert [nl.a(k) for k in range(4)] == [0, 1, 2, 0]
    assert nl.nu == 3


@pytest.mark.parametrize("name, d", [("relu", 1), ("linear", 1), ("tanh", 0), ("abs", 1), ("sign", 0), ("gelu", 1)])
def test_d(name, d):
    assert Nonlinearity(name).d == d


def test_d_undefined():
    with pytest.raises(ParameterError, match="diagonal='keep' is unsupported"):
        _ = Nonlinearity("poly2").d
    assert hermite_report("poly2", k=1)["d"] is None


# -- tanh: quadrature against an independent reference -----------------------------


def _tanh_a1_reference(dps=50):
    # Stein's lemma: a_1 = E[f'(ξ)] = E[sech(ξ)^2]; a different integrand from the module's E[f(ξ) ξ]
    with mpmath.workdps(dps):
        return mpmath.quad(lambda x: mpmath.sech(x) ** 2 * mpmath.npdf(x), [-mpmath.inf, 0, mpmath.inf])


def test_tanh_a1_and_nu():
    nl = Nonlinearity("tanh")
    ref = _tanh_a1_reference()
    with mpmath.workdps(50):
        a1 = nl.a_mpf(1, 40)
        assert abs(a1 - ref) < mpmath.mpf(10) ** -38
        nu = nl.nu_mpf(30)
        # Stein's lemma again: E[tanh^2] = 1 - E[sech^2] = 1 - a_1
        assert abs(nu - (1 - a1)) < mpmath.mpf(10) ** -28
    assert mpmath.nstr(a1, 10) == "0.6057055096"
    assert not nl.exact
    with pytest.raises(NotExact):
        nl.a(1)
    assert nl.a(2) == 0  # odd f: parity gives exact zeros


@pytest.mark.parametrize("name", ["tanh", "relu", "sigmoid"])
def test_precision_30_vs_60(name):
    nl = Nonlinearity(name)
    with mpmath.workdps(70):
        for k in (1, 2, 3):
            assert abs(nl.a_mpf(k, 30) - nl.a_mpf(k, 60)) < mpmath.mpf(10) ** -28
        assert abs(nl.nu_mpf(30) - nl.nu_mpf(60)) < mpmath.mpf(10) ** -28


def test_global_precision_untouched():
    before = mpmath.mp.dps
    Nonlinearity("tanh").a_mpf(3, 45)
    assert mpmath.mp.dps == before


# -- kinks away from 0 -------------------------------------------------------------


def test_kink_not_at_zero_numeric_matches_exact():
    f = sp.Max(T, sp.Rational(3, 10))
    nl = Nonlinearity(f, center=True)
    pieces = smooth_pieces(nl.expr)  # the centered f, cut at its kink
    assert [p[1] for p in pieces[:-1]] == [sp.Rational(3, 10)]
    from symrmt.hermite.quadrature import numeric_hermite, numeric_square

    with mpmath.workdps(40):
        for k in (1, 2, 3):
            exact = nl.a(k)
            num = numeric_hermite(pieces, k, 32)
            assert abs(mpmath.mpf(str(sp.N(exact, 40))) - num) < mpmath.mpf(10) ** -30
        a0 = numeric_hermite(smooth_pieces(f), 0, 32)
        nu_num = numeric_square(smooth_pieces(f), 32) - a0**2
        assert abs(mpmath.mpf(str(sp.N(nl.nu, 40))) - nu_num) < mpmath.mpf(10) ** -30


def test_parsed_decimal_is_exact():
    assert parse_f("Max(t, 0.3)") == sp.Max(T, sp.Rational(3, 10))


# -- numeric centering (softplus) --------------------------------------------------


def test_softplus_centered_numerically():
    nl = Nonlinearity("softplus")
    assert nl.a(0) == 0
    assert abs(nl.a_mpf(1, 30) - mpmath.mpf(1) / 2) < mpmath.mpf(10) ** -28  # softplus(t) - t/2 is even
    g = nl.numpy()
    xs = np.linspace(-10, 10, 40001)
    w = np.exp(-(xs**2) / 2) / np.sqrt(2 * np.pi)
    assert abs(np.trapezoid(g(xs) * w, xs)) < 1e-6  # the simulation callable is centered too


# -- numpy bridge -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_numpy_callable(name):
    nl = Nonlinearity(name)
    g = nl.numpy()
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    y = g(x)
    assert y.dtype == np.float64 and y.shape == x.shape
    fm = sp.lambdify(T, nl.expr, "mpmath")
    for xi, yi in zip(x.ravel()[:5], y.ravel()[:5]):
        assert abs(float(fm(mpmath.mpf(float(xi)))) - yi) < 1e-12


# -- report contract ----------------------------------------------------------------


def test_report_contract():
    r = hermite_report("relu", k=3)
    assert set(r) == {"a", "a1", "nu", "d", "exact"}
    assert len(r["a"]) == 4 and all(isinstance(v, float) for v in r["a"])
    assert r["a1"] == 0.5 and r["d"] == 1.0 and r["exact"] is True
    r = hermite_report("tanh", k=1, dps=25)
    assert isinstance(r["a1"], str) and r["a1"].startswith("0.605705509602158825583540")
    assert r["exact"] is False


# -- bad input -----------------------------------------------------------------------


def test_not_centered():
    with pytest.raises(ParameterError, match=r"f is not centered: a_0 = E\[f\(ξ\)\] = .*pass center=True"):
        Nonlinearity("Max(t, 0)")
    with pytest.raises(ParameterError, match="not centered"):
        Nonlinearity("softplus(t)")  # not the preset: no implicit centering
    nl = Nonlinearity("cos(t)", center=True)
    assert _zero(nl.expr - (sp.cos(T) - sp.exp(-sp.Rational(1, 2))))


@pytest.mark.parametrize("text", ["exp(t**2)", "exp(t**2/2)", "exp(t**2/4)"])
def test_divergent(text):
    with pytest.raises(ParameterError, match=r"E\[f\(ξ\)\^2\] diverges"):
        Nonlinearity(text, center=True)


@pytest.mark.parametrize("text", ["tanh(t", "t +* ", "", "t, t", "t > 0"])
def test_unparsable(text):
    with pytest.raises(ParameterError, match="f"):
        parse_f(text)


@pytest.mark.parametrize("text, word", [("gamma*t", "gamma"), ("tanh(x)", "x"), ("I*t", "I"), ("S(1)*t", "S")])
def test_foreign_names(text, word):
    with pytest.raises(ParameterError, match=f"unknown name '{word}'"):
        parse_f(text)


def test_free_symbol_in_sympy_expr():
    with pytest.raises(ParameterError, match="free symbols other than t"):
        Nonlinearity(sp.Symbol("t") * sp.Symbol("g"))


@pytest.mark.parametrize(
    "text",
    ["__import__('os').system('echo hi')", "t.__class__", "(lambda: 1)()", "t.func", "'a'", "[t][0]", "1j*t"],
)
def test_injection(text):
    with pytest.raises(ParameterError):
        parse_f(text)


def test_not_real():
    with pytest.raises(ParameterError, match="real and finite"):
        Nonlinearity("sqrt(t)")


def test_numpy_overflow_is_loud_not_silent():
    assert Nonlinearity("sigmoid").numpy()(np.array([-1000.0, 1000.0])).tolist() == [-0.5, 0.5]
    with pytest.raises(FloatingPointError):
        Nonlinearity("softplus").numpy()(np.array([1000.0]))


def test_thread_safe_time_limit():
    import threading

    out = {}
    th = threading.Thread(target=lambda: out.setdefault("r", hermite_report("erf", k=1)))
    th.start()
    th.join()
    assert out["r"]["exact"] is True
