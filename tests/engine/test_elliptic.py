"""The elliptic law elliptic(n, tau) (symrmt/engine/laws/elliptic.py).

Outside its support the resolvent is tau((z - A/sqrt(n))^{-1}) = (z - sqrt(z^2 - 4 tau))/(2 tau) on the
branch ~ 1/z (Sommers, Crisanti, Sompolinsky and Stein 1988); inside the ellipse with semi-axes 1 + tau,
1 - tau (the Brown measure, uniform) it is x/(1 + tau) on the real axis; at tau = 1 the matrix is a GOE.
The simulation draws the pairs (A_ij, A_ji) directly with correlation tau (not through the engine's
decomposition).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from symrmt.engine import Model
from symrmt.engine.lang.node import ModelError

EXPR = "trace(inv(z*I(n) - A/sqrt(n)))"


def outside(z, tau):
    z, tau = mpmath.mpf(z), mpmath.mpf(tau)
    if tau == 0:
        return 1 / z
    return (z - mpmath.sign(z) * mpmath.sqrt(z * z - 4 * tau)) / (2 * tau)


def model(tau):
    m = Model()
    m.elliptic("A", "n", tau)
    return m


@pytest.mark.parametrize("tau,z", [("1/2", "3"), ("1/3", "-5/2"), ("-1/2", "2"), ("9/10", "2"), ("0", "3/2")])
def test_resolvent_outside_the_ellipse(tau, z):
    from fractions import Fraction

    got = model(tau).limit(EXPR, at={"z": z}, digits=30)
    with mpmath.workdps(40):
        zq, tq = Fraction(z), Fraction(tau)
        want = outside(mpmath.mpf(zq.numerator) / zq.denominator, mpmath.mpf(tq.numerator) / tq.denominator)
        assert abs(got.value - want) <= mpmath.mpf(10) ** -28 * abs(want)


def test_goe_at_tau_one_is_the_semicircle():
    got = model(1).limit(EXPR, at={"z": 3}, digits=30)
    with mpmath.workdps(40):
        want = (3 - mpmath.sqrt(5)) / 2
        assert abs(got.value - want) <= mpmath.mpf(10) ** -28


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_brown_measure_inside_the_ellipse():
    """Inside the support the Hermitized limit is x/(1 + tau) (uniform law on the ellipse): tau = -1/2, x = 1/4."""
    got = model("-1/2").limit(EXPR, at={"z": "1/4"}, digits=15)
    assert got.hermitized
    with mpmath.workdps(30):
        assert abs(got.value - mpmath.mpf(1) / 4 / (1 - mpmath.mpf(1) / 2)) <= mpmath.mpf(10) ** -14


def draw(n, tau, rng):
    """An elliptic matrix drawn pair by pair: A_ij = a, A_ji = tau a + sqrt(1 - tau^2) b for i < j."""
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, n))
    upper = np.triu(a, 1)
    lower = np.triu(tau * a + np.sqrt(1 - tau ** 2) * b, 1).T
    return upper + lower + np.diag(rng.standard_normal(n) * np.sqrt(1 + tau))


def test_simulation_resolvent_and_support():
    """n = 400: the resolvent at z = 2.5 within 3 se + 1/n of the limit, and the eigenvalues inside the
    ellipse (x/(1+tau))^2 + (y/(1-tau))^2 <= 1 up to a finite-size margin, filling it (the widest x and y)."""
    rng = np.random.default_rng(7)
    n, tau = 400, 0.5
    vals, eigs = [], []
    for _ in range(12):
        A = draw(n, tau, rng) / np.sqrt(n)
        vals.append(np.trace(np.linalg.inv(2.5 * np.eye(n) - A)) / n)
        eigs.append(np.linalg.eigvals(A))
    limit = float(model("1/2").limit(EXPR, at={"z": "5/2"}, digits=15).value)
    mean, se = np.mean(vals), np.std(vals, ddof=1) / np.sqrt(len(vals))
    assert abs(mean - limit) <= 3 * se + 1 / n
    ev = np.concatenate(eigs)
    r = (ev.real / (1 + tau)) ** 2 + (ev.imag / (1 - tau)) ** 2
    assert np.mean(r <= 1.0) > 0.97 and r.max() < 1.25
    assert abs(ev.real).max() > 0.9 * (1 + tau) and abs(ev.imag).max() > 0.8 * (1 - tau)
    # uniform on the ellipse: a fraction s^2 of the eigenvalues lies in the scaled ellipse r <= s^2
    assert abs(np.mean(r <= 0.25) - 0.25) < 0.03


def test_engine_simulation_of_the_elliptic_law():
    """The engine's own simulation (it draws the GOE and skew leaves) agrees with the limit."""
    from symrmt.engine import bind
    from symrmt.engine.simulate.monte_carlo import simulate_trace

    m = model("1/2")
    sim = simulate_trace(bind(m.parse(EXPR), {"z": 2.5}, 200), trials=8, seed=3, progress=False)
    limit = float(m.limit(EXPR, at={"z": "5/2"}, digits=15).value)
    assert abs(sim["mean"] - limit) <= 3 * sim["se"] + 1 / 200


def test_tau_out_of_range_and_cli(capsys):
    with pytest.raises(ModelError, match=r"\[-1, 1\]"):
        model(2)
    import json

    from symrmt.cli.app import main

    rc = main(["trace", EXPR, "--matrix", "A=elliptic(n, 1/3)", "--at", "z=3", "--json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert abs(float(json.loads(cap.out)["value"]) - float(outside(3, mpmath.mpf(1) / 3))) < 1e-14


def test_the_one_over_n_term_is_refused_for_the_elliptic_law():
    """The engine's sum has a zero diagonal, the ensemble's is N(0, 1 + tau): the limits agree, the 1/n terms do
    not. At tau = 0 (Ginibre), n = 24, tau((A A^T/n + 2/5)^{-1}): an independent simulation of the ensemble
    (draw(), 4000 trials) lies within 3 se + 1/n^2 of the prediction of gaussian(n, n), and the same draws
    with their diagonal set to 0 (the engine's sum) lie many se away; so the elliptic law refuses the term."""
    e = "trace(inv(A*A.T/n + g*I(n)))"
    with pytest.raises(ModelError, match="elliptic matrix A is not covered by the 1/n term"):
        model("0").limit(e, at={"g": "2/5"}, n=24)
    m = Model()
    m.gaussian("A", "n", "n")
    want = float(m.limit(e, at={"g": "2/5"}, digits=15, n=24).value)
    rng = np.random.default_rng(5)
    n = 24
    vals = [np.trace(np.linalg.inv((lambda a: a @ a.T / n)(draw(n, 0.0, rng)) + 0.4 * np.eye(n))) / n
            for _ in range(4000)]
    mean, se = np.mean(vals), np.std(vals, ddof=1) / np.sqrt(len(vals))
    assert abs(mean - want) <= 3 * se + 1 / n ** 2
    # the engine's zero-diagonal sum at the same size: a different 1/n term, many se away
    zero = []
    for _ in range(4000):
        a = draw(n, 0.0, rng)
        np.fill_diagonal(a, 0.0)
        zero.append(np.trace(np.linalg.inv(a @ a.T / n + 0.4 * np.eye(n))) / n)
    se_zero = np.std(zero, ddof=1) / np.sqrt(len(zero))
    assert abs(np.mean(zero) - mean) > 10 * np.hypot(se, se_zero)
