r"""auto-fpt example 2, anisotropic Marchenko-Pastur, written as an expression (no pencil given).

Claim.  For ``Z`` an ``n x d`` Gaussian matrix, ``d = phi n``, a covariance ``Sigma`` with a
finite spectral law ``sum_i w_i delta_{sigma_i}`` and ``X = Z Sigma^{1/2}``,

.. math::

    \lambda\, \tau_d\!\left(\left(\frac{X^T X}{n} + \lambda I_d\right)^{-1}\right) \to
    \frac{\lambda m}{\phi} + 1 - \frac{1}{\phi}, \qquad
    \frac{1}{m} = \lambda + \phi \sum_i \frac{w_i \sigma_i}{1 + \sigma_i m},

where ``m = lim tau_n((X X^T/n + lambda)^{-1})`` solves Silverstein's equation (the ``n x n`` and
``d x d`` resolvents share their non-zero spectrum: ``d tau_d = n tau_n + (d - n)/lambda``).
This is auto-fpt's ``(X^T X + I_d)^{-1}`` with entries of variance ``1/(n lambda)``.

symrmt needs ``lam*trace(inv(S*Z.T*Z*S/n + lam*I(d)))`` with ``S = Sigma^{1/2}`` declared by its
law, ``diag(d, (1, 2), (1/2, 1/2))`` (so ``Sigma`` has eigenvalues 1 and 4 in equal parts); the
engine splits ``d`` into one block per atom.  auto-fpt needs a pencil built beforehand
(``anisotropic-MP-pencil.pkl``, NCAlgebra in Mathematica), with ``Sigma^{1/2}`` a symbol that
commutes with the other covariances, and returns the equations unsolved.
"""

from __future__ import annotations

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_anisotropic_mp"
EXPR = "lam*trace(inv(S*Z.T*Z*S/n + lam*I(d)))"
SQRT_VALUES, WEIGHTS = ("1", "2"), ("1/2", "1/2")
POINTS = ({"phi": "1/2", "lam": "1/10"}, {"phi": "2", "lam": "1/5"}, {"phi": "1", "lam": "1"})


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    m.diag("S", "d", list(SQRT_VALUES), list(WEIGHTS))
    return m


def _mpq(text):
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def silverstein(phi, lam, sigmas, weights):
    """``m = lim tau_n((X X^T/n + lambda)^{-1})``: ``1/m = lambda + phi sum_i w_i s_i/(1 + s_i m)``, m in (0, 1/lambda]."""
    def rhs(m):
        return 1 / (lam + phi * sum(w * s / (1 + s * m) for s, w in zip(sigmas, weights)))

    m = 1 / lam
    for _ in range(400):  # increasing bounded map: monotone convergence, then a Newton polish
        m = rhs(m)
    return mpmath.findroot(lambda x: x - rhs(x), m)


def closed_form(phi, lam, dps: int):
    """The limit from Silverstein's equation for the two-atom covariance, solved here at ``dps`` digits."""
    with mpmath.workdps(dps):
        phi, lam = _mpq(phi), _mpq(lam)
        sigmas = [_mpq(v) ** 2 for v in SQRT_VALUES]
        m = silverstein(phi, lam, sigmas, [_mpq(w) for w in WEIGHTS])
        return lam * m / phi + 1 - 1 / phi


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    ex.check_pencil(ck, "anisotropic MP", m, EXPR)
    for at in POINTS:
        r = m.limit(EXPR, at=at, digits=digits)
        ref = closed_form(at["phi"], at["lam"], digits + 20)
        ex.close(ck, f"limit == Silverstein (phi={at['phi']}, lam={at['lam']})", r.value, ref, digits)
    at = POINTS[0]
    ex.check_simulation(ck, "anisotropic MP phi=1/2 lam=1/10", m, EXPR, at, m.limit(EXPR, at=at, digits=15).value,
                        quick, seed=2)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return ex.latex_of(model(), EXPR)


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
