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


# a curve: each point continued from the previous one ------------------------------
def test_curve_down_to_small_gamma_against_the_closed_form():
    """Thirteen decades of gamma, each point started from the previous one (the rank-deficient c = 1/2 has
    its atom at 0: the trace grows like 1/(2 gamma)); every point certified to 25 digits."""
    gammas = [Fraction(1, 10**k) for k in range(13)]
    rs = wishart().curve(MP, over={"gamma": gammas}, at={"c": "1/2"}, digits=25, progress=False)
    assert len(rs) == len(gammas)
    for g, r in zip(gammas, rs):
        ref = mp_closed_form(Fraction(1, 2), g)
        assert abs(r.value - ref) <= mpmath.mpf(10) ** -25 * abs(ref), (g, r.value, ref)


def test_curve_across_the_spectrum_starts_afresh_on_the_right_branch():
    """z from below the spectrum [(sqrt 2 - 1)^2, (sqrt 2 + 1)^2] of Z.T*Z/n (c = 2) to above it: the
    continuation from z = 1/10 to z = 10 meets the edge and must not carry the solution across; the point
    starts afresh and gets the Stieltjes branch: of the two roots of -z m^2 + (c - 1 - z) m - 1 = 0, the one
    of smaller modulus, continuous with m -> 0 as |z| -> oo on either side of the spectrum (checked: m > 0
    below the spectrum, m < 0 above it)."""
    m = wishart()
    zs = [Fraction(-1), Fraction(1, 10), Fraction(10), Fraction(12)]
    rs = m.curve("trace(inv(Z.T*Z/n - z*I(n)))", over={"z": zs}, at={"c": 2}, digits=20, progress=False)
    with mpmath.workdps(60):
        for z, r in zip(zs, rs):
            zz = mpmath.mpf(z.numerator) / z.denominator
            a, b = -zz, 1 - zz
            roots = [(-b + s * mpmath.sqrt(b * b + 4 * a)) / (2 * a) for s in (1, -1)]
            ref = min(roots, key=abs)
            assert (ref > 0) == (zz < 1)
            assert abs(r.value - ref) <= mpmath.mpf(10) ** -20 * abs(ref), (z, r.value, ref, roots)


def test_curve_in_a_ratio_and_its_errors():
    m = wishart()
    cs = [Fraction(1, 2), Fraction(2, 3), Fraction(3, 2)]
    rs = m.curve(MP, over={"c": cs}, at={"gamma": "1/3"}, digits=20, progress=False)
    for c, r in zip(cs, rs):
        assert abs(r.value - mp_closed_form(c, Fraction(1, 3))) <= mpmath.mpf(10) ** -20
    with pytest.raises(ValueError, match="exactly one parameter"):
        m.curve(MP, over={"gamma": [1], "c": [1]}, digits=10)
    with pytest.raises(ValueError, match="both in over= and in at="):
        m.curve(MP, over={"gamma": [1]}, at={"gamma": 1, "c": 1}, digits=10)
    with pytest.raises(SolverError, match="^at gamma = -1: "):
        m.curve(MP, over={"gamma": [1, -1]}, at={"c": 2}, digits=10)
