"""Points the homotopy in s cannot reach, reached by a continuation in a parameter; the absolute
certificate of a limit 0; errors that say which step failed.

Reference: the Marchenko-Pastur closed form (the positive root of
``gamma m^2 + (gamma + c - 1) m - 1 = 0``, the root continued from large gamma below the spectrum),
evaluated here at 120 digits, independent of the engine.
"""

from fractions import Fraction

import mpmath
import pytest

from symrmt.engine import Model
from symrmt.errors import SolverError

MP = "trace(inv(Z.T*Z/n + gamma*I(n)))"


def mp_closed_form(c, gamma):
    with mpmath.workdps(120):
        c, gamma = mpmath.mpf(c.numerator) / c.denominator, mpmath.mpf(gamma.numerator) / gamma.denominator
        b = gamma + c - 1
        disc = mpmath.sqrt(b * b + 4 * gamma)
        # the root (disc - b)/(2 gamma), rationalized where b > 0 to avoid the cancellation
        return 2 / (disc + b) if b > 0 else (disc - b) / (2 * gamma)


def wishart():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    return m


@pytest.mark.parametrize("c", [Fraction(1, 2), Fraction(1), Fraction(2)])
@pytest.mark.parametrize("gamma", [Fraction(1, 10**12), Fraction(1, 10**30)])
def test_small_gamma(c, gamma):
    r = wishart().limit(MP, at={"c": c, "gamma": gamma}, digits=20)
    ref = mp_closed_form(c, gamma)
    with mpmath.workdps(40):
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** -19


def test_far_side_of_a_gap():
    # c = 2: the spectrum of Z^T Z/n is [(sqrt 2 - 1)^2, (sqrt 2 + 1)^2] ~ [0.1716, 5.83]; z = 0.1 lies below it, but
    # the spectrum grows from 0 along the homotopy and crosses z: the start is continued in z from z = -1
    r = wishart().limit("trace(inv(Z.T*Z/n - z*I(n)))", at={"c": 2, "z": Fraction(1, 10)}, digits=20)
    ref = mp_closed_form(Fraction(2), Fraction(-1, 10))
    with mpmath.workdps(40):
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** -19
    assert mpmath.nstr(r.value, 11) == "1.2984378813"  # the closed form, to 11 digits


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_inside_the_spectrum_says_where_the_path_broke():
    # c = 2, gamma = -1: inside the bulk [(sqrt 2 - 1)^2, (sqrt 2 + 1)^2]; the continuation from gamma = 1 stops at
    # the lower edge, gamma = -(sqrt 2 - 1)^2 = -0.171573
    with pytest.raises(SolverError, match=r"stalled at gamma = -0\.17157"):
        wishart().limit(MP, at={"c": 2, "gamma": -1})
    # c = 1/2: the atom of mass 1/2 at 0 stops it at gamma = 0
    with pytest.raises(SolverError, match=r"stalled at gamma = -?[0-9.]+e-[0-9]+ \(the fixed point's Jacobian"):
        wishart().limit(MP, at={"c": Fraction(1, 2), "gamma": Fraction(-1, 2)})


def test_absolute_certificate_of_a_zero_limit():
    # the Marchenko-Pastur equation itself, evaluated at its solution: exactly 0 (not symbolically)
    expr = f"gamma*{MP}**2 + (gamma+c-1)*{MP} - 1"
    r = wishart().limit(expr, at={"c": Fraction(1, 2), "gamma": Fraction(1, 5)}, digits=15)
    assert r.certificate == "absolute" and r.value == 0
    r = wishart().limit(MP, at={"c": Fraction(1, 2), "gamma": Fraction(1, 5)}, digits=15)
    assert r.certificate == "relative"


def test_semicircle_edge_is_reached():
    # tau((G/sqrt(n) + 2)^{-1}) = -G_sc(-2) = 1: the homotopy ends exactly at the edge, where Newton is only
    # linear; the point is solved as an edge (R = 0, J v = 0, gamma free: gamma* = 2)
    m = Model()
    m.goe("G", "n")
    r = m.limit("trace(inv(G/sqrt(n) + gamma*I(n)))", at={"gamma": 2}, digits=30)
    assert abs(r.value - 1) <= mpmath.mpf(10) ** -29


def test_marchenko_pastur_edge_is_reached():
    # c = 2, gamma = -(sqrt 2 - 1)^2, the lower edge: m = 1/(sqrt(2) (sqrt(2) - 1)) (the double root of the quadratic)
    r = wishart().limit(MP, at={"c": 2, "gamma": "-3+2*sqrt(2)"}, digits=25)
    with mpmath.workdps(60):
        g = -(mpmath.sqrt(2) - 1) ** 2
        ref = -(g + 1) / (2 * g)  # the double root of gamma m^2 + (gamma + 1) m - 1 = 0
        assert abs(r.value - ref) <= abs(ref) * mpmath.mpf(10) ** -24
