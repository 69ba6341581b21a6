"""Hermite data of steep and kinked f (symrmt.hermite): closed forms at large arguments, the
quadratures' caps refused in one line, and Stein's identity at 300 digits.
"""

from __future__ import annotations

import json
import subprocess
import sys

import mpmath
import pytest
import sympy as sp

from symrmt.cli.app import main
from symrmt.hermite.gaussian import T
from symrmt.hermite.nonlinearity import Nonlinearity
from symrmt.hermite.quadrature import QuadratureError, quad_pieces

pytestmark = pytest.mark.slow  # seconds a test: outside the fast tier (pytest -m "not slow")


def _cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def cli(*args, timeout=300):
    """The completed ``python -m symrmt ARGS`` (the timeout only stops a hang: no test asserts a time)."""
    return subprocess.run([sys.executable, "-m", "symrmt", *args], capture_output=True, text=True, timeout=timeout)


def _rel(x, ref):
    with mpmath.workdps(40):
        return float(abs(mpmath.mpf(x) - ref) / abs(ref))


def _one_line_refusal(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout[-300:], p.stderr[-300:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_hermite_beyond_double_range(capsys):
    code, out, _ = _cli(["hermite", "--f", "exp(50*t)", "--center", "--json"], capsys)
    assert code == 0
    rep = json.loads(out)  # strict JSON: no Infinity
    import mpmath

    # a_1 = E[xi exp(50 xi)] = 50 exp(1250) (Gaussian integration by parts), independent of centering
    with mpmath.workdps(30):
        expected = 50 * mpmath.exp(1250)
        assert abs(mpmath.mpf(rep["a1"]) / expected - 1) < 1e-13
        # nu = E[f^2] - a_0^2 with f centered: exp(5000) - exp(2500)
        assert abs(mpmath.mpf(rep["nu"]) / (mpmath.exp(5000) - mpmath.exp(2500)) - 1) < 1e-13
    assert "inf" not in out.lower()


@pytest.mark.parametrize("a", [450, 700])
def test_steep_exponential_hermite_data_is_the_closed_form(a):
    f = Nonlinearity(f"exp({a}*t)", center=True)
    with mpmath.workdps(40):
        for k in (1, 2, 3):  # E[exp(a xi) He_k(xi)] = a^k e^(a^2/2); the centering constant has He_0 only
            assert _rel(f.a_mpf(k, 30), mpmath.mpf(a) ** k * mpmath.exp(mpmath.mpf(a) ** 2 / 2)) < 1e-28
        # nu = E[(e^(a xi) - e^(a^2/2))^2] = e^(2 a^2) - e^(a^2)
        assert _rel(f.nu_mpf(30), mpmath.exp(2 * mpmath.mpf(a) ** 2) - mpmath.exp(mpmath.mpf(a) ** 2)) < 1e-28


def test_steep_quadrature_is_certified_or_refused():
    # E[exp(450 xi)] has all its mass near xi = 450: the certified quadrature returns e^101250 or refuses
    pieces = ((-sp.oo, sp.oo, sp.exp(450 * T)),)
    try:
        v = quad_pieces(pieces, 1, 20)
    except QuadratureError as exc:
        # refused: not certified, not converged, or stopped by the quadrature's time limit (QUAD_SECONDS)
        assert any(why in str(exc) for why in ("not certified", "did not converge", "exceeded its time limit"))
    else:
        with mpmath.workdps(40):
            assert _rel(v, mpmath.exp(mpmath.mpf(101250))) < 1e-18


def test_quadrature_caps_refused():
    p = cli("hermite", "--f", "tanh", "--digits", "1000", "--json")
    _one_line_refusal(p, "trapezoid_digits")
    p = cli("limit", "--f", "tanh", "--c", "0.5", "--gamma", "1", "--snr", "1", "--digits", "600", "--json")
    _one_line_refusal(p, "trapezoid_digits")
    # a kinked f without closed forms goes to tanh-sinh, whose caps are lower
    p = cli("hermite", "--f", "Abs(tanh(t)) - 1/2", "--center", "--digits", "100", "--json")
    _one_line_refusal(p, "quadrature_digits")


def test_trapezoid_moments_agree_with_tanh_sinh():
    from symrmt.hermite.quadrature import trapezoid_moments

    vals = trapezoid_moments(sp.tanh(T), 64, 30)
    with mpmath.workdps(45):
        for k in (1, 3, 15):  # the certified tanh-sinh of the same moments
            ref = quad_pieces(((-sp.oo, sp.oo, sp.tanh(T)),), 1, 30, sp.hermite_prob(k, T))
            assert abs(vals[k] - ref) <= mpmath.mpf(10) ** -28 * max(1, abs(ref)), k
        assert abs(vals[2]) < mpmath.mpf(10) ** -40 and abs(vals[60]) < mpmath.mpf(10) ** -20  # tanh is odd


def test_tanh_at_300_digits_satisfies_steins_identity():
    # E[xi tanh(xi)] = E[tanh'(xi)] = 1 - E[tanh(xi)^2]: a_1 + nu = 1, an identity the quadrature does not know
    f = Nonlinearity("tanh")
    a1, nu = f.a_mpf(1, 300), f.nu_mpf(300)
    with mpmath.workdps(320):
        assert abs(a1 + nu - 1) < mpmath.mpf(10) ** -298


def test_tanh_k60_runs():
    p = cli("hermite", "--f", "tanh", "--k", "60", "--json")
    assert p.returncode == 0, p.stderr
    a = json.loads(p.stdout)["a"]
    assert len(a) == 61 and a[59] != 0 and a[60] == 0
