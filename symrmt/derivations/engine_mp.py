r"""auto-fpt example 1, Marchenko-Pastur, written as an expression (no pencil given).

Claim.  For ``Z`` an ``n x d`` Gaussian matrix, ``d = phi n``, and ``lambda > 0``,

.. math::

    \lambda\, \tau_d\!\left(\left(\frac{Z^T Z}{n} + \lambda I_d\right)^{-1}\right) \to \lambda m,
    \qquad \phi \lambda m^2 + (1 - \phi + \lambda) m - 1 = 0,\ m > 0,

(the Marchenko-Pastur Stieltjes transform of ratio ``phi`` at ``-lambda``).  This is auto-fpt's
``(Z^T Z + I_d)^{-1}`` with entries of variance ``1/(n lambda)``.

symrmt needs the expression ``lam*trace(inv(Z.T*Z/n + lam*I(d)))`` with ``Z = gaussian(n, d)``
and ``d = phi*n``; the engine derives the pencil and the fixed point, solves, certifies at two
precisions and checks the value against the quadratic (30 digits) and against a simulation.
auto-fpt needs a linear pencil built beforehand (its ``MP-pencil.pkl``, from NCAlgebra in
Mathematica) and returns the fixed-point equations, unsolved.
"""

from __future__ import annotations

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_mp"
EXPR = "lam*trace(inv(Z.T*Z/n + lam*I(d)))"
POINTS = ({"phi": "1/2", "lam": "1/10"}, {"phi": "2", "lam": "1/100"}, {"phi": "1", "lam": "1"})


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("d", "phi*n")
    m.gaussian("Z", "n", "d")
    return m


def closed_form(phi, lam, dps: int):
    """``lambda m`` with ``m`` the positive root of ``phi lambda m^2 + (1 - phi + lambda) m - 1 = 0``."""
    with mpmath.workdps(dps):
        phi, lam = mpmath.mpf(phi), mpmath.mpf(lam)
        b = 1 - phi + lam
        m = (-b + mpmath.sqrt(b * b + 4 * phi * lam)) / (2 * phi * lam)
        return lam * m


def _mpq(text):
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    ex.check_pencil(ck, "MP", m, EXPR)
    for at in POINTS:
        r = m.limit(EXPR, at=at, digits=digits)
        with mpmath.workdps(digits + 20):
            ref = closed_form(_mpq(at["phi"]), _mpq(at["lam"]), digits + 20)
        ex.close(ck, f"limit == closed form (phi={at['phi']}, lam={at['lam']})", r.value, ref, digits)
        ck.add(f"0 < lam tau <= 1 (phi={at['phi']}, lam={at['lam']})", "precision", 0 < r.value <= 1,
               mpmath.nstr(r.value, 12))
    at = POINTS[0]
    ex.check_simulation(ck, "MP phi=1/2 lam=1/10", m, EXPR, at, m.limit(EXPR, at=at, digits=15).value, quick, seed=1)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    m = model()
    return ex.latex_of(m, EXPR)


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
