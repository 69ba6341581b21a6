r"""auto-fpt example 5, two populations (subordination), written as an expression.

Claim.  With ``Z_k`` an ``n_k x d`` Gaussian matrix (``n_k = p_k n``, ``d = phi n``), commuting
covariances ``Sigma_k = S_k^2`` with a joint finite law (atoms ``a`` of weight ``w_a`` where
``Sigma_k = s_{k,a}``), ``X_k = Z_k S_k`` and ``R = (X_1^T X_1/n + X_2^T X_2/n + lambda I_d)^{-1}``,

.. math::

    \lambda \tau_d(R) \to \sum_a \frac{w_a \lambda}{\sum_k p_k s_{k,a}/(1 + \delta_k) + \lambda}, \qquad
    \delta_k = \phi \sum_a \frac{w_a s_{k,a}}{\sum_j p_j s_{j,a}/(1 + \delta_j) + \lambda}

(each population subordinates the resolvent of the other: ``R ~ (sum_k p_k Sigma_k/(1 + delta_k)
+ lambda)^{-1}`` with ``delta_k = lim tr(Sigma_k R)/n``).

Here ``S_1`` is declared by its law, ``diag(d, (1, 2), (1/2, 1/2))``, and ``S_2 = 3 I - S_1``
(values 2 and 1: the two populations have opposite anisotropies), which gives the joint law.

symrmt needs ``lam*trace(inv(S1*Z1.T*Z1*S1/n + S2*Z2.T*Z2*S2/n + lam*I(d)))`` with ``S2`` written
out; the engine splits ``d`` into the atoms of ``S_1`` and derives the pencil.  auto-fpt needs a
pencil built beforehand (``subordination-pencil.pkl``, NCAlgebra in Mathematica), covariance
symbols assumed to commute, and the variances ``1/(n lambda)`` given by hand.
"""

from __future__ import annotations

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_subordination"
S2 = "(3*I(d) - S1)"
EXPR = f"lam*trace(inv(S1*Z1.T*Z1*S1/n + {S2}*Z2.T*Z2*{S2}/n + lam*I(d)))"
S1_VALUES, WEIGHTS = ("1", "2"), ("1/2", "1/2")
POINTS = ({"p1": "1/2", "p2": "1", "phi": "1", "lam": "1/10"}, {"p1": "2", "p2": "1/3", "phi": "1/2", "lam": "1"})


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("n1", "p1*n")
    m.dim("n2", "p2*n")
    m.dim("d", "phi*n")
    m.gaussian("Z1", "n1", "d")
    m.gaussian("Z2", "n2", "d")
    m.diag("S1", "d", list(S1_VALUES), list(WEIGHTS))
    return m


def _q(text):
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def closed_form(at: dict, dps: int):
    """``lambda tau(R)`` from the two coupled scalar equations for ``delta_1, delta_2``."""
    with mpmath.workdps(dps):
        p = [_q(at["p1"]), _q(at["p2"])]
        phi, lam = _q(at["phi"]), _q(at["lam"])
        s1 = [_q(v) ** 2 for v in S1_VALUES]
        s = [s1, [(3 - mpmath.sqrt(x)) ** 2 for x in s1]]
        ws = [_q(w) for w in WEIGHTS]

        def denom(delta, a):
            return sum(p[k] * s[k][a] / (1 + delta[k]) for k in range(2)) + lam

        def rhs(delta):
            return [phi * sum(ws[a] * s[k][a] / denom(delta, a) for a in range(len(ws))) for k in range(2)]

        delta = [mpmath.mpf(0), mpmath.mpf(0)]
        for _ in range(400):  # monotone iteration from 0, then a Newton polish
            delta = rhs(delta)
        sol = mpmath.findroot(lambda x, y: [x - rhs([x, y])[0], y - rhs([x, y])[1]], delta)
        delta = [sol[0], sol[1]]
        return lam * sum(ws[a] / denom(delta, a) for a in range(len(ws)))


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    ex.check_pencil(ck, "two populations", m, EXPR)
    for at in POINTS:
        r = m.limit(EXPR, at=at, digits=digits)
        ex.close(ck, f"limit == coupled subordination equations (p1={at['p1']}, p2={at['p2']}, phi={at['phi']}, "
                 f"lam={at['lam']})", r.value, closed_form(at, digits + 20), digits)
    at = POINTS[0]
    ex.check_simulation(ck, "two populations", m, EXPR, at, m.limit(EXPR, at=at, digits=15).value, quick, seed=7)
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
