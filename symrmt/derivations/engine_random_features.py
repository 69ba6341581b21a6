r"""auto-fpt example 3, random features: ``tau_1 = tau(K^{-1})`` and ``tau_2 = tau(X^T X K^{-1})/d``.

Claim.  With ``X`` (``d x n``), ``W`` (``m x d``) and ``Theta`` (``m x n``) independent Gaussian
matrices, ``d = phi n``, ``m = d/psi``, the Gaussian-equivalent random features
``F = sqrt(zeta) W X/sqrt(d) + sqrt(beta) Theta`` and ``K = F^T F/m + lambda I_n``, the limits

.. math::

    \tau_1 = \tau(K^{-1}), \qquad \tau_2 = \tau\!\left(\frac{X^T X}{d} K^{-1}\right)

satisfy Adlam and Pennington's (2020) coupled equations (S67), (S68), with ``eta = zeta + beta``:

.. math::

    \phi\left(\zeta \tau_2 \tau_1 + \phi (\tau_2 - \tau_1)\right) + \zeta \tau_1 \tau_2 \psi (\lambda \tau_1 - 1) &= 0, \\
    (\tau_2 - \tau_1) \phi \left(\zeta (\tau_2 - \tau_1) + \eta \tau_1\right) - \zeta \tau_1 \tau_2 (\lambda \tau_1 - 1) &= 0.

For ReLU features ``F = relu(W X/sqrt(d)) - 1/sqrt(2 pi)``, ``zeta = (E relu')^2 = 1/4`` and
``eta = E F^2 = 1/2 - 1/(2 pi)`` (Gaussian equivalence); the full run also checks the limit
against a simulation of the ReLU features themselves.

symrmt needs the two expressions (``F`` written out, see :data:`F`) and the declarations
``W = gaussian(m, d)``, ``X = gaussian(d, n)``, ``Th = gaussian(m, n)`` (``Theta``), ``d = phi*n``,
``m = (phi/psi)*n``; the engine derives one pencil per trace and solves both.  auto-fpt needs a
pencil of ``X^T X K^{-1} + K^{-1}`` built beforehand (``random-features-pencil.pkl``, NCAlgebra in
Mathematica), the variances of ``X, W0, Theta0`` given by hand, and returns the equations; its
example then iterates them 100 times in floating point.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.derivations import _engine_examples as ex
from symrmt.engine import Model

NAME = "engine_random_features"
F = "(sqrt(zeta)*W*X/sqrt(d) + sqrt(beta)*Th)"
TAU1 = f"trace(inv({F}.T*{F}/m + lam*I(n)))"
TAU2 = f"trace(X.T*X/d*inv({F}.T*{F}/m + lam*I(n)))"
#: auto-fpt's example values (phi, psi, lambda) with ReLU's zeta = 1/4 and beta = 1/4 - 1/(2 pi) (40 digits)
RELU_BETA = "0.0908450569081046010945181233014549658051"
AT = {"phi": "3/2", "psi": "4/5", "lam": "1/10", "zeta": "1/4", "beta": RELU_BETA}
OTHER = {"phi": "1/2", "psi": "2", "lam": "1", "zeta": "1/3", "beta": "1/5"}


def model():
    """The engine :class:`~symrmt.engine.Model` this derivation declares (its dimensions and matrices)."""
    mdl = Model()
    mdl.dim("d", "phi*n")
    mdl.dim("m", "phi/psi*n")
    mdl.gaussian("W", "m", "d")
    mdl.gaussian("X", "d", "n")
    mdl.gaussian("Th", "m", "n")
    return mdl


def relations(at: dict, tau1, tau2):
    """The residuals of (S67) and (S68) at the values ``at``."""
    q = {k: eval_q(v) for k, v in at.items()}
    phi, psi, lam, zeta = q["phi"], q["psi"], q["lam"], q["zeta"]
    eta = zeta + q["beta"]
    s67 = phi * (zeta * tau2 * tau1 + phi * (tau2 - tau1)) + zeta * tau1 * tau2 * psi * (lam * tau1 - 1)
    s68 = (tau2 - tau1) * phi * (zeta * (tau2 - tau1) + eta * tau1) - zeta * tau1 * tau2 * (lam * tau1 - 1)
    return s67, s68


def relu_features(n: int, at: dict, trials: int, seed: int):
    """``(tau_1, tau_2)`` trials of the ReLU random features themselves (not their Gaussian equivalent)."""
    phi, psi, lam = (float(eval_q(at[k])) for k in ("phi", "psi", "lam"))
    d = round(phi * n)
    m = round(phi / psi * n)
    out = np.empty((trials, 2))
    for j, ss in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        rng = np.random.default_rng(ss)
        W = rng.standard_normal((m, d))
        X = rng.standard_normal((d, n))
        Fm = np.maximum(W @ X / math.sqrt(d), 0) - 1 / math.sqrt(2 * math.pi)
        Kinv = np.linalg.inv(Fm.T @ Fm / m + lam * np.eye(n))
        out[j] = np.trace(Kinv) / n, np.einsum("ij,ji->", X.T @ X / d, Kinv) / n
    return out


def eval_q(text: str):
    """The mpf of ``"a/b"`` or ``"a"``.

    >>> float(eval_q("1/8"))
    0.125
    """
    a, _, b = text.partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    mdl = model()
    ex.check_pencil(ck, "tau_1", mdl, TAU1)
    ex.check_pencil(ck, "tau_2", mdl, TAU2)
    for at in (AT, OTHER):
        t1 = mdl.limit(TAU1, at=at, digits=digits).value
        t2 = mdl.limit(TAU2, at=at, digits=digits).value
        with mpmath.workdps(digits + 10):
            s67, s68 = relations(at, t1, t2)
            scale = max(abs(t1), abs(t2)) ** 3
            worst = max(abs(s67), abs(s68)) / scale
        ck.add(f"(S67), (S68) hold at phi={at['phi']}, psi={at['psi']}, lam={at['lam']}", "precision",
               worst <= mpmath.mpf(10) ** -(digits - 2), f"relative residual {mpmath.nstr(worst, 3)}")
    t1 = mdl.limit(TAU1, at=AT, digits=15).value
    t2 = mdl.limit(TAU2, at=AT, digits=15).value
    ex.check_simulation(ck, "tau_1 (Gaussian-equivalent features)", mdl, TAU1, AT, t1, quick, seed=3)
    ex.check_simulation(ck, "tau_2 (Gaussian-equivalent features)", mdl, TAU2, AT, t2, quick, seed=3)
    if not quick:
        n, trials, rel = ex.sizes(quick)
        sims = relu_features(n, AT, trials, seed=4)
        mean, se = sims.mean(axis=0), sims.std(axis=0, ddof=1) / math.sqrt(trials)
        for k, (name, val) in enumerate((("tau_1", t1), ("tau_2", t2))):
            ck.statistical(f"{name}: limit vs ReLU random features n={n}, {trials} trials", mean[k], se[k],
                           float(val), k=ex.K_SE, slack=rel * abs(float(val)))
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    mdl = model()
    return ex.latex_of(mdl, TAU1) + "\n" + ex.latex_of(mdl, TAU2)


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
