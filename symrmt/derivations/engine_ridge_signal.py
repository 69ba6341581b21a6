r"""The paper's ridge error ``E_RR`` with a signal, written as an expression of the trace engine.

Claim.  With ``X = mu y^T + Z`` (``Z`` a ``p x n`` Gaussian matrix, ``p = c n``, ``mu`` deterministic
with ``||mu||^2 = mu.mu``, ``y`` iid signs), the engine's limit of

.. math::  E_{RR}(\gamma) = -\gamma^2 \partial_\gamma \left[ y^T (X^T X/n + \gamma I_n)^{-1} y / n \right]

equals the package's closed form of the ridge error (:func:`symrmt.models.attention.theory.ridge_limit`,
compiled from :func:`symrmt.models.attention.equations.ridge_error_closed_form`, a Sherman-Morrison update of
the Marchenko-Pastur resolvent derived by hand, with no pencil).  The engine conditions on ``y``
(``||y||^2 = n``), takes ``mu y^T`` by Woodbury on the Gram matrix of ``(mu, y/sqrt(n))``, and
differentiates the tree exactly (``d Q = -Q (dQ^{-1}) Q``).
"""

from __future__ import annotations

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model
from symrmt.models.attention.theory import ridge_limit

NAME = "engine_ridge_signal"
E_RR = "-gamma**2*diff(y.T*inv(X.T*X/n + gamma*I(n))*y/n, gamma)"
POINTS = ({"c": "1/2", "gamma": "1/10", "mu.mu": "3/2"}, {"c": "2", "gamma": "1", "mu.mu": "4"},
          {"c": "1/4", "gamma": "1/100", "mu.mu": "1/3"}, {"c": "3/2", "gamma": "7/10", "mu.mu": "0"})


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("mu", "p")
    m.signs("y", "n")
    m.let("X", m.parse("mu*y.T + Z"))
    return m


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    forms = m.woodbury(E_RR)
    ck.add("E_RR: pencil and Woodbury system derived and self-tested", "symbolic", bool(forms.latex()),
           f"Woodbury system of size {len(forms[0].units)}")
    for at in POINTS:
        v = m.limit(E_RR, at=at, digits=digits).value
        ref = ridge_limit(at["c"], [at["gamma"]], snr=at["mu.mu"], digits=digits + 5)[0]
        ex.close(ck, f"E_RR == ridge closed form (c={at['c']}, gamma={at['gamma']}, mu.mu={at['mu.mu']})", v, ref,
                 digits)
    at = POINTS[0]
    ex.check_simulation(ck, "E_RR", m, E_RR, at, m.limit(E_RR, at=at, digits=15).value, quick, seed=11,
                        full_trials=10, quick_trials=10)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return model().woodbury(E_RR).latex()


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
