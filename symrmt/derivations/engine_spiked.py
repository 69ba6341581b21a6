r"""A spiked population covariance: quadratic forms of the sample resolvent along the spike.

Claim.  With ``Z`` a ``p x n`` Gaussian matrix, ``p = c n``, a unit vector ``v`` (``v.v = 1``), the
population ``Sigma^{1/2} = I + k v v^T`` (so ``Sigma`` has the eigenvalue ``ell = (1 + k)^2`` along
``v`` and 1 elsewhere), ``S = Sigma^{1/2} Z Z^T Sigma^{1/2}/n`` and ``Q = (S + gamma I)^{-1}``:

.. math::

    v^T Q v \to \frac{1}{\ell/(1 + \delta) + \gamma}, \qquad
    w^T Q w \to \frac{(v.w)^2}{\ell/(1 + \delta) + \gamma} + \frac{w.w - (v.w)^2}{1/(1 + \delta) + \gamma},

where ``delta`` is the positive root of ``gamma delta^2 + (1 + gamma - c) delta - c = 0`` (the
Marchenko-Pastur value ``delta = c m(-gamma)``, which a finite-rank spike does not move), because the
deterministic equivalent of ``Q`` is ``(Sigma/(1 + delta) + gamma I)^{-1}`` (Silverstein and Bai 1995;
Couillet and Liao 2022, Theorem 2.6) and ``v`` is an eigenvector of ``Sigma``.

symrmt needs the expressions below; the spike enters the pencil as an outer product ``k*v*v.T`` and
the engine takes it exactly by Woodbury on the Gram matrix of ``v, w``.
"""

from __future__ import annotations

import mpmath

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_spiked"
Q = "inv(R*Z*Z.T*R/n + gamma*I(p))"
QVV = f"v.T*{Q}*v"
QWW = f"w.T*{Q}*w"
QVW = f"v.T*{Q}*w"
POINTS = ({"c": "1/2", "gamma": "1/5", "k": "1", "v.v": "1", "w.w": "1", "v.w": "1/2"},
          {"c": "2", "gamma": "1", "k": "1/2", "v.v": "1", "w.w": "3/2", "v.w": "-1/3"},
          {"c": "3/10", "gamma": "1/10", "k": "3", "v.v": "1", "w.w": "2", "v.w": "1"})


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    m.vector("v", "p")
    m.vector("w", "p")
    m.let("R", m.parse("I(p) + k*v*v.T"))
    return m


def _q(text):
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def closed_forms(at, dps: int):
    """``(v^T Q v, w^T Q w, v^T Q w)`` of the module docstring."""
    with mpmath.workdps(dps):
        c, g, k = _q(at["c"]), _q(at["gamma"]), _q(at["k"])
        vw, ww = _q(at["v.w"]), _q(at["w.w"])
        b = 1 + g - c
        delta = (-b + mpmath.sqrt(b * b + 4 * g * c)) / (2 * g)
        ell = (1 + k) ** 2
        along, across = 1 / (ell / (1 + delta) + g), 1 / (1 / (1 + delta) + g)
        return along, vw**2 * along + (ww - vw**2) * across, vw * along


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m = model()
    forms = m.woodbury(QVV)
    ck.add("v^T Q v: pencil and Woodbury system derived and self-tested", "symbolic", bool(forms.latex()),
           f"Woodbury system of size {len(forms[0].units)}")
    for at in POINTS:
        refs = closed_forms(at, digits + 20)
        tag = ", ".join(f"{k}={v}" for k, v in at.items() if k != "v.v")
        for label, e, ref in zip(("v^T Q v", "w^T Q w", "v^T Q w"), (QVV, QWW, QVW), refs):
            ex.close(ck, f"{label} == closed form ({tag})", m.limit(e, at=at, digits=digits).value, ref, digits)
    at = POINTS[0]
    for label, e, seed in (("v^T Q v", QVV, 7), ("w^T Q w", QWW, 8)):
        ex.check_simulation(ck, label, m, e, at, m.limit(e, at=at, digits=15).value, quick, seed=seed,
                            full_trials=20, quick_trials=10)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return model().woodbury(QVV).latex()


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
