r"""Fresh samples in the trace engine: test errors as one expression over a training and a fresh sample.

Claim.  Let a quadratic form cross, in a dimension ``D``, between two sets of independent random objects
(a readout trained on one sample, evaluated on another), with ``E`` the deterministic vectors of ``D`` in
it (Gram matrix ``G``).  If one side is built from Gaussian and GOE matrices and deterministic vectors,
its law is invariant under the rotations of ``D`` that fix ``E``, and

.. math::

    a^T b \to (E^T a)^T G^+ (E^T b), \qquad
    a^T M b \to \tau(M)\big(a^T b - (E^T a)^T G^+ (E^T b)\big) + (E^T a)^T G^+ (E^T M E) G^+ (E^T b)

for ``a, b`` of one side and ``M`` of the other; a random matrix that enters a product once, linearly,
independent of the rest of it, makes that product tend to 0 (mean 0, variance ``O(1/n)``).  With the
push-through identity ``Q P Q = c (Q + s\, dQ/ds)`` for ``Q = inv(P/c + s I)`` (the squared norm of a
ridge readout), the engine (:mod:`symrmt.engine.reduce.independence`) solves

- the paper's test error ``T_A = ||y2 - (X2 K2)^T w||^2/n`` (``docs/theory.md`` section 12) written as
  one expression over the training sequence and a fresh one with its own kernel
  (:func:`symrmt.models.attention.engine_model.fresh_sample_model`): it agrees with
  ``symrmt limit --error test`` (the hand-built solver and the formula ``T(v)`` of section 12.1) to 25
  digits and more, without and with a signal, and ``T_RR`` with the ridge closed form of section 12.3;
- the random-features risk with label noise on a fresh test sample that shares the feature weights ``W``:
  equal to the risk with the test expectation taken by hand,
  ``|beta - mu1 W^T A/sqrt(d)|^2 + mus^2 |A|^2 + sigma^2``, to 25 digits and more, and (full run) within
  3 se + 0.01 of a simulation of the relu random features themselves;
- two closed forms of Marchenko-Pastur: ``u^T R_1 R_2 u -> |u|^2 m^2`` and
  ``u^T R_1 S_2 R_1 u -> |u|^2 (-m')`` for independent resolvents.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

import symrmt
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.engine import Model
from symrmt.models.attention.engine_model import fresh_sample_model
from symrmt.models.attention.generalization import ridge_test_formula

NAME = "engine_fresh_samples"
GOAL = 25


def _agree(a, b) -> float:
    with mpmath.workdps(60):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        err = abs(a - b) / max(1, abs(b))
        return float(-mpmath.log10(err)) if err else 60.0


def _mp(c, g):
    gs = sp.Symbol("g", positive=True)
    m = (-(gs + 1 - c) + sp.sqrt((gs + 1 - c) ** 2 + 4 * c * gs)) / (2 * c * gs)
    return sp.N(m.subs(gs, g), 50), sp.N(sp.diff(m, gs).subs(gs, g), 50)


def rf_model():
    """Random-features ridge with label noise and a fresh test sample ``(X2, Th2, e2)`` sharing ``W``."""
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


RF_FRESH = "(y2 - F2.T*A).T*(y2 - F2.T*A)/n"
RF_HAND = "beta.T*beta - 2*mu1*beta.T*W.T*A/sqrt(d) + mu1**2*A.T*W*W.T*A/d + mus**2*A.T*A + sigma**2"


def rf_at():
    """relu features: mu1 = 1/2, mus = sqrt(1/4 - 1/(2 pi)) (40 digits)."""
    with mpmath.workdps(50):
        mus = mpmath.nstr(mpmath.sqrt(mpmath.mpf(1) / 4 - 1 / (2 * mpmath.pi)), 40)
    return {"phi": "1/2", "psi": "3/2", "mu1": "1/2", "mus": mus, "lam": "1/10", "sigma": "1/2", "beta.beta": "1"}


def relu_risk(n: int, trials: int, seed: int):
    """Test risks of relu random features (no Gaussian equivalent) at the point of :func:`rf_at`."""
    d, N, nt = n // 2, 3 * n // 2, 2048
    rng = np.random.default_rng(seed)
    act = lambda z: np.maximum(z, 0) - 1 / np.sqrt(2 * np.pi)  # noqa: E731
    out = []
    for _ in range(trials):
        beta = rng.standard_normal(d)
        beta /= np.linalg.norm(beta)
        W, X = rng.standard_normal((N, d)), rng.standard_normal((d, n))
        F = act(W @ X / np.sqrt(d))
        y = X.T @ beta + 0.5 * rng.standard_normal(n)
        A = np.linalg.solve(F @ F.T / n + 0.1 * np.eye(N), F @ y / n)
        X2 = rng.standard_normal((d, nt))
        y2 = X2.T @ beta + 0.5 * rng.standard_normal(nt)
        out.append(np.mean((y2 - act(W @ X2 / np.sqrt(d)).T @ A) ** 2))
    return np.array(out)


def run(quick: bool = False, digits: int = 30) -> CheckList:
    ck = CheckList(NAME)
    m, exprs = fresh_sample_model("tanh", rank=0)
    for snr in ((0,) if quick else (0, 2)):
        at = {"c": "1/2", "gamma": "1/10", **({"mu.mu": str(snr)} if snr else {})}
        r = m.limit(exprs["T_A"], at=at, digits=digits)
        ref = symrmt.limit("tanh", "1/2", ["1/10"], snr=snr, digits=digits, error="test").attention_mp[0]
        got = _agree(r.value, ref)
        ck.add(f"T_A as one expression == symrmt limit --error test (tanh, c=1/2, gamma=1/10, |mu|^2={snr})",
               "precision", got >= GOAL, f"{got:.1f} digits, {mpmath.nstr(r.value, 12)}")
        rr = m.limit(exprs["T_RR"], at=at, digits=digits)
        closed = str(sp.N(ridge_test_formula(sp.Rational(1, 2), sp.Rational(1, 10), snr), 50))
        got = _agree(rr.value, closed)
        ck.add(f"T_RR as one expression == the ridge closed form (|mu|^2={snr})", "precision", got >= GOAL,
               f"{got:.1f} digits")
    mp = Model()
    mp.dim("p", "c*n")
    mp.gaussian("Z", "p", "n")
    mp.gaussian("Z2", "p", "n")
    mp.vector("u", "p")
    at = {"c": "1/2", "g": "1/3", "u.u": "3/2"}
    mm, dm = _mp(sp.Rational(1, 2), sp.Rational(1, 3))
    R1, R2 = "inv(Z*Z.T/n + g*I(p))", "inv(Z2*Z2.T/n + g*I(p))"
    for text, closed, what in ((f"u.T*{R1}*{R2}*u", sp.Rational(3, 2) * mm**2, "|u|^2 m^2"),
                               (f"u.T*{R1}*Z2*Z2.T*{R1}*u/n", -sp.Rational(3, 2) * dm, "|u|^2 (-m')")):
        got = _agree(mp.limit(text, at=at, digits=digits).value, str(closed))
        ck.add(f"{text} -> {what} (Marchenko-Pastur)", "precision", got >= GOAL, f"{got:.1f} digits")
    rf, rat = rf_model(), rf_at()
    fresh = rf.limit(RF_FRESH, at=rat, digits=digits).value
    got = _agree(fresh, rf.limit(RF_HAND, at=rat, digits=digits).value)
    ck.add("random-features risk with label noise on a fresh sample == the risk reduced by hand", "precision",
           got >= GOAL, f"{got:.1f} digits, {mpmath.nstr(fresh, 12)}")
    if not quick:
        sims = relu_risk(512, 12, seed=11)
        mean, se = float(sims.mean()), float(sims.std(ddof=1) / math.sqrt(len(sims)))
        ck.statistical("random-features risk vs relu features n=512, 12 trials", mean, se, float(fresh), k=3,
                       slack=0.01)
    return ck


def main(argv=None) -> int:
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
