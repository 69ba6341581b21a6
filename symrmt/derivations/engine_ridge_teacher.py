r"""The test risk of ridge regression with a teacher vector, written as one quadratic form.

Claim.  With ``Z`` an ``n x d`` Gaussian matrix (rows ``x_i ~ N(0, I_d)``), ``d = phi n``, a teacher
``beta`` (deterministic, ``||beta||^2 = r2``), labels ``y = Z beta + sigma e`` with ``e`` a
``gaussian_vector(n)``, the ridge estimator ``beta_hat = (Z^T Z/n + lam I)^{-1} Z^T y/n`` has the
excess test risk ``||beta_hat - beta||^2``, bias ``B = lam^2 beta^T (Sigma_hat + lam I)^{-2} beta``
and variance ``V = sigma^2 e^T Z (Sigma_hat + lam I)^{-2} Z^T e/n^2`` with the limits of Hastie,
Montanari, Rosset and Tibshirani (2019, Theorem 1, isotropic case)

.. math::

    B = r_2 \lambda^2 m'(-\lambda), \qquad V = \sigma^2 \phi \, (m(-\lambda) - \lambda m'(-\lambda)),

where ``m`` is the Marchenko-Pastur Stieltjes transform of ratio ``phi``:
``phi lam m^2 + (1 - phi + lam) m - 1 = 0`` at ``z = -lam`` (the positive root), and ``m'`` its
derivative from that quadratic (implicitly, exactly).  At ``lam* = phi sigma^2/r2`` the risk is
``phi sigma^2 m(-lam*)``, the optimal ridge risk of Dobriban and Wager (2018, isotropic case).

symrmt needs the expressions below; the quadratic forms' limits come from the pencil's deterministic
equivalent with the teacher taken by Woodbury; the bias and the variance are checked separately and
together (the cross term vanishes) against the closed forms, and against a simulation of the same
expressions.
"""

from __future__ import annotations

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_ridge_teacher"
R = "inv(Z.T*Z/n + lam*I(d))"
BIAS = f"lam**2*beta.T*{R}*{R}*beta"
VARIANCE = f"sigma**2*e.T*Z*{R}*{R}*Z.T*e/n**2"
RISK = "B.T*B"
ERR = f"{R}*Z.T*(Z*beta + sigma*e)/n - beta"
POINTS = ({"phi": "1/2", "lam": "1/10", "beta.beta": "5/2", "sigma": "1/2"},
          {"phi": "2", "lam": "1/2", "beta.beta": "1", "sigma": "1"},
          {"phi": "3/2", "lam": "3/10", "beta.beta": "2", "sigma": "1"})
OPTIMAL = {"phi": "3/2", "beta.beta": "2", "sigma": "1"}


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    m.vector("beta", "d")
    m.gaussian_vector("e", "n")
    m.let("B", m.parse(ERR))
    return m


def _q(text):
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def hastie(phi, lam, r2, sigma, dps: int):
    """``(B, V)`` of the closed forms (the module docstring)."""
    with mpmath.workdps(dps):
        phi, lam, r2, sigma = _q(phi), _q(lam), _q(r2), _q(sigma)
        b = 1 - phi + lam
        m = (-b + mpmath.sqrt(b * b + 4 * phi * lam)) / (2 * phi * lam)
        dm = -(phi * m * m + m) / (2 * phi * lam * m + b)   # d/dlam of m(-lam)
        mprime = -dm                                        # m'(z) at z = -lam
        return r2 * lam**2 * mprime, sigma**2 * phi * (m - lam * mprime), m


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    for label, e in (("bias", BIAS), ("variance", VARIANCE), ("risk", RISK)):
        forms = m.woodbury(e)
        ck.add(f"{label}: pencil and Woodbury system derived and self-tested", "symbolic", bool(forms.latex()),
               f"{len(forms)} form(s), Woodbury systems of size {[len(f.units) for f in forms]}")
    for at in POINTS:
        b = m.limit(BIAS, at=at, digits=digits).value
        v = m.limit(VARIANCE, at=at, digits=digits).value
        r = m.limit(RISK, at=at, digits=digits).value
        rb, rv, _ = hastie(at["phi"], at["lam"], at["beta.beta"], at["sigma"], digits + 20)
        tag = f"phi={at['phi']}, lam={at['lam']}, r2={at['beta.beta']}, sigma={at['sigma']}"
        ex.close(ck, f"bias == Hastie et al. ({tag})", b, rb, digits)
        ex.close(ck, f"variance == Hastie et al. ({tag})", v, rv, digits)
        with mpmath.workdps(digits + 20):
            total = rb + rv
        ex.close(ck, f"risk ||beta_hat - beta||^2 == B + V ({tag})", r, total, digits)
    at = dict(OPTIMAL, lam="3/4")  # lam* = phi sigma^2 / r2 = (3/2)(1)/2
    r = m.limit(RISK, at=at, digits=digits).value
    _, _, mm = hastie(at["phi"], at["lam"], at["beta.beta"], at["sigma"], digits + 20)
    with mpmath.workdps(digits + 20):
        ref = _q(at["phi"]) * _q(at["sigma"]) ** 2 * mm
    ex.close(ck, "risk at lam* = phi sigma^2/r2 == phi sigma^2 m(-lam*) (Dobriban-Wager)", r, ref, digits)
    at = POINTS[0]
    for label, e, seed in (("bias", BIAS, 3), ("variance", VARIANCE, 4), ("risk", RISK, 5)):
        ex.check_simulation(ck, label, m, e, at, m.limit(e, at=at, digits=15).value, quick, seed=seed,
                            full_trials=20, quick_trials=10)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return model().woodbury(BIAS).latex()


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
