"""The trace engine on a fresh, independent sample: the test error of the paper's model as one engine
expression (``symrmt.models.attention.engine_model.fresh_sample_model``), split by the engine across the
training and the fresh sequence (``symrmt.engine.reduce.independence``).

References are independent of the split: ``symrmt.limit(..., error="test")`` (the hand-built solver and the
formula T(v) of docs/theory.md section 12.1), the ridge closed form of section 12.3, Marchenko-Pastur closed
forms, and simulations of the unsplit expression (3 se: a two-sided 0.3% tail per comparison).
"""

from __future__ import annotations

import json

import mpmath
import pytest
import sympy as sp

import symrmt
from symrmt.cli.app import main
from symrmt.engine import Model
from symrmt.models.attention.engine_model import fresh_sample_model
from symrmt.models.attention.generalization import ridge_test_formula

pytestmark = pytest.mark.slow

TOL = mpmath.mpf(10) ** -25


def _close(a, b, tol=TOL):
    """``|a - b| <= tol max(1, |b|)``, numbers or decimal strings read at 50 digits."""
    with mpmath.workdps(50):
        a, b = mpmath.mpf(str(a) if not isinstance(a, mpmath.mpf) else a), mpmath.mpf(str(b) if not isinstance(
            b, mpmath.mpf) else b)
        return abs(a - b) <= tol * max(1, abs(b))


@pytest.mark.parametrize("snr", [0, 2])
def test_attention_test_error_is_one_expression(snr):
    """T_A = ||y2 - (X2 K2)^T w||^2/n with w trained on (X, y): no signal and a signal (W = I), 30 digits
    asked, 25 compared against symrmt.limit(error="test"); T_RR against the ridge closed form."""
    m, exprs = fresh_sample_model("tanh", rank=0)
    at = {"c": "1/2", "gamma": "1/10"}
    if snr:
        at["mu.mu"] = str(snr)
    r = m.limit(exprs["T_A"], at=at, digits=30)
    assert any("independent samples" in s for s in r.notes)
    ref = symrmt.limit("tanh", "1/2", ["1/10"], snr=snr, digits=30, error="test").attention_mp[0]
    assert _close(r.value, ref), (r.value, ref)
    rr = m.limit(exprs["T_RR"], at=at, digits=30)
    closed = sp.N(ridge_test_formula(sp.Rational(1, 2), sp.Rational(1, 10), snr), 40)
    assert _close(rr.value, str(closed))


def _mp_model():
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.gaussian("Z2", "p", "n")
    m.vector("u", "p")
    m.signs("y", "n")
    return m


def _mp(c, g):
    """Marchenko-Pastur: m = tau((Z Z^T/n + g I)^{-1}) for Z p x n, p = c n (the positive root), and dm/dg."""
    gs = sp.Symbol("g", positive=True)
    m = (-(gs + 1 - c) + sp.sqrt((gs + 1 - c) ** 2 + 4 * c * gs)) / (2 * c * gs)
    return sp.N(m.subs(gs, g), 40), sp.N(sp.diff(m, gs).subs(gs, g), 40)


def test_the_rules_on_marchenko_pastur():
    """Two independent resolvents R1, R2 of Z Z^T/n, Z2 Z2^T/n: u^T R1 R2 u -> |u|^2 m^2 (the crossing a^T b)
    and u^T R1 (Z2 Z2^T/n) R1 u -> |u|^2 (-m') (the crossing a^T M b); y^T Z^T R1 Z2 Z2^T R1 Z y/n^3 ->
    (the squared norm of R1 Z y/n) = tau(R1 S1 R1) = m - g(-m') with tau(Z2 Z2^T/n) = 1."""
    m = _mp_model()
    c, g, uu = sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(3, 2)
    at = {"c": "1/2", "g": "1/3", "u.u": "3/2"}
    mm, dm = _mp(c, g)
    R1, R2 = "inv(Z*Z.T/n + g*I(p))", "inv(Z2*Z2.T/n + g*I(p))"
    r = m.limit(f"u.T*{R1}*{R2}*u", at=at, digits=30)
    assert _close(r.value, str(sp.N(uu * mm**2, 40)))
    r = m.limit(f"u.T*{R1}*Z2*Z2.T*{R1}*u/n", at=at, digits=30)
    assert _close(r.value, str(sp.N(-uu * dm, 40)))
    r = m.limit(f"y.T*Z.T*{R1}*Z2*Z2.T*{R1}*Z*y/n**3", at=at, digits=30)
    assert _close(r.value, str(sp.N(c * (mm + g * dm), 40)))  # tr over p, read per n: factor c


def test_a_random_vector_of_one_sample_against_the_other_is_centred():
    """e^T M v with e independent of M and v: 0, stated in the notes."""
    m = _mp_model()
    at = {"c": "1/2", "g": "1/3", "u.u": "1"}
    r = m.limit("y.T*Z.T*inv(Z*Z.T/n + g*I(p))*Z2*Z2.T*u/n**2", at=at, digits=20)
    assert r.value == 0 and r.notes


def test_split_agrees_with_the_simulation_of_the_whole_expression(capsys):
    """The unsplit expression simulated (n = 256, 10 trials): the limit of the split one within 3 se + 1%."""
    R = "inv(Z*Z.T/n + g*I(p))"
    expr = f"(y2 - Z2.T*{R}*Z*y/n).T*(y2 - Z2.T*{R}*Z*y/n)/n"
    code = main(["trace", expr, "--dim", "p=c*n", "--matrix", "Z=gaussian(p,n)", "--matrix", "Z2=gaussian(p,n)",
                 "--vector", "y=signs(n)", "--vector", "y2=signs(n)", "--at", "c=1/2, g=1/3", "--digits", "20",
                 "--simulate", "--n", "256", "--trials", "10", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    sim = out["simulation"]
    assert abs(sim["mean"] - float(out["value"])) <= 3 * sim["se"] + 0.01 * abs(float(out["value"]))
    # the same value in closed form: 1 + ||w||^2 with w = R Z y/n, ||w||^2 -> c (m + g m')
    mm, dm = _mp(sp.Rational(1, 2), sp.Rational(1, 3))
    assert _close(out["value"], str(sp.N(1 + sp.Rational(1, 2) * (mm + sp.Rational(1, 3) * dm), 40)),
                  mpmath.mpf(10) ** -18)


def _rf_model():
    """Random-features ridge (Gaussian equivalent of relu features) with label noise, and a fresh test sample
    ``(X2, Th2, e2)`` that shares the feature weights ``W`` with training."""
    m = Model()
    m.dim("d", "phi*n")
    m.dim("N", "psi*n")
    for s in ("", "2"):
        m.gaussian(f"X{s}", "d", "n")
        m.gaussian(f"Th{s}", "N", "n")
        m.gaussian_vector(f"e{s}", "n")
    m.gaussian("W", "N", "d")
    m.vector("beta", "d")
    m.let("F", m.parse("mu1*W*X/sqrt(d) + mus*Th"))
    m.let("A", m.parse("inv(F*F.T/n + lam*I(N))*F*(X.T*beta + sigma*e)/n"))
    m.let("F2", m.parse("mu1*W*X2/sqrt(d) + mus*Th2"))
    m.let("y2", m.parse("X2.T*beta + sigma*e2"))
    return m


#: centred relu: mu1 = E[g relu(g)] = 1/2, mus^2 = E[relu^2] - E[relu]^2 - mu1^2 = 1/4 - 1/(2 pi)
with mpmath.workdps(50):
    _MUS = mpmath.nstr(mpmath.sqrt(mpmath.mpf(1) / 4 - 1 / (2 * mpmath.pi)), 40)
RF_AT = {"phi": "1/2", "psi": "3/2", "mu1": "1/2", "mus": _MUS, "lam": "1/10", "sigma": "1/2", "beta.beta": "1"}
RF_FRESH = "(y2 - F2.T*A).T*(y2 - F2.T*A)/n"


def test_random_features_risk_on_a_fresh_sample_is_one_expression():
    """The test risk with label noise written on a fresh sample (one expression: bias, variance and noise)
    equals the risk with the test expectation taken by hand, |beta - mu1 W^T A/sqrt(d)|^2 + mus^2 |A|^2 + sigma^2,
    to 25 digits (the split rules against the textbook reduction)."""
    m = _rf_model()
    hand = "beta.T*beta - 2*mu1*beta.T*W.T*A/sqrt(d) + mu1**2*A.T*W*W.T*A/d + mus**2*A.T*A + sigma**2"
    r = m.limit(RF_FRESH, at=RF_AT, digits=30)
    assert any("crosses in dimension d" in s for s in r.notes)
    assert _close(r.value, m.limit(hand, at=RF_AT, digits=30).value)


def test_random_features_risk_against_the_nonlinear_model():
    """The same limit against a simulation of the random-features model itself: relu(W x/sqrt(d)) - 1/sqrt(2 pi)
    features of Gaussian inputs (no Gaussian equivalent), ridge on n = 256 samples, the risk on 2048 fresh
    points; 16 trials, within 3 se + 0.01 (one-off: n = 512 and 1024 put the mean within 1.2 and 1.0 se)."""
    import numpy as np

    theory = float(_rf_model().limit(RF_FRESH, at=RF_AT, digits=15).value)
    n, trials, nt = 256, 16, 2048
    d, N = n // 2, 3 * n // 2
    rng = np.random.default_rng(7)
    act = lambda z: np.maximum(z, 0) - 1 / np.sqrt(2 * np.pi)  # noqa: E731
    risks = []
    for _ in range(trials):
        beta = rng.standard_normal(d)
        beta /= np.linalg.norm(beta)
        W, X = rng.standard_normal((N, d)), rng.standard_normal((d, n))
        F = act(W @ X / np.sqrt(d))
        y = X.T @ beta + 0.5 * rng.standard_normal(n)
        A = np.linalg.solve(F @ F.T / n + 0.1 * np.eye(N), F @ y / n)
        X2 = rng.standard_normal((d, nt))
        y2 = X2.T @ beta + 0.5 * rng.standard_normal(nt)
        risks.append(np.mean((y2 - act(W @ X2 / np.sqrt(d)).T @ A) ** 2))
    mean, se = np.mean(risks), np.std(risks, ddof=1) / np.sqrt(trials)
    assert abs(mean - theory) <= 3 * se + 0.01, (mean, se, theory)
