r"""Hermite linearization of the kernel (the Gaussian-equivalent kernel).

Claim.  For centered ``f`` with ``a_k = E[f(xi) He_k(xi)]`` and ``nu = E[f(xi)^2]``,
in the limit ``K = f(X^T W X/sqrt p)/sqrt p`` may be replaced by

.. math:: K \simeq a_1 \Bigl(\frac{X^T W X}{p} - I_n\Bigr) + \sqrt{\nu - a_1^2}\,\frac{G}{\sqrt p} + d\, I_n,

with ``G`` symmetric Gaussian (zero diagonal, unit off-diagonal variance) independent
of ``X``; only ``a_1``, ``nu`` and ``d`` survive.

Checks: exact Hermite values (erf, sin, cos, ReLU), Stein's identity for tanh
(``nu = 1 - a_1``) at 40 digits, Parseval ``nu = sum_k a_k^2 / k!`` for a polynomial,
and a simulation of ``E_A`` with the nonlinear kernel against the same simulation
with the Gaussian-equivalent kernel (two-sample test).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import sympy as sp

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.hermite import Nonlinearity
from symrmt.latex_blocks import MODEL, align
from symrmt.models.attention import equations as S
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import attention_errors, draw_tokens, vectors_from_gram, simulate

NAME = "hermite_linearization"


def _equivalent_kernel_errors(f_lin, n, c, gammas, geo, trials, seed):
    """E_A with the Gaussian-equivalent kernel (a1, b, d) in place of f: NumPy, same model otherwise."""
    a1, b, d = f_lin
    p = round(c * n)
    mu, wk, wq = vectors_from_gram([[float(x) for x in row] for row in geo.gram()], p)
    out = []
    for child in np.random.SeedSequence(seed).spawn(trials):
        rng = np.random.default_rng(child)
        X, y = draw_tokens(rng, n, mu)
        M = (X.T @ X + np.outer(X.T @ wk, wq @ X)) / p
        Gm = rng.standard_normal((n, n))
        Gm = np.triu(Gm, 1)
        Gm = Gm + Gm.T
        K = a1 * (M - np.eye(n)) + b * Gm / math.sqrt(p) + d * np.eye(n)
        out.append(attention_errors(X, K, y, gammas))
    out = np.array(out)
    return out.mean(axis=0), out.std(axis=0, ddof=1) / math.sqrt(trials)


def run(quick: bool = False, digits: int = 40) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    erf = Nonlinearity("erf")
    ck.symbolic("erf: a1 = 2/sqrt(3 pi)", erf.a(1) - 2 / sp.sqrt(3 * sp.pi))
    ck.symbolic("erf: nu = (2/pi) asin(2/3)", erf.nu - 2 / sp.pi * sp.asin(sp.Rational(2, 3)))
    ck.symbolic("sin: a1 = exp(-1/2)", Nonlinearity("sin").a(1) - sp.exp(-sp.Rational(1, 2)))
    ck.symbolic("centered cos: a1 = 0", Nonlinearity("cos").a(1))
    relu = Nonlinearity("relu")
    ck.symbolic("centered ReLU: a1 = 1/2", relu.a(1) - sp.Rational(1, 2))
    ck.symbolic("centered ReLU: nu = 1/2 - 1/(2 pi)", relu.nu - (sp.Rational(1, 2) - 1 / (2 * sp.pi)))
    tanh = Nonlinearity("tanh")
    with mpmath.workdps(digits + 10):
        one_minus_a1 = 1 - tanh.a_mpf(1, digits + 5)
    ck.close("tanh: nu = 1 - a1 (Stein's lemma)", tanh.nu_mpf(digits + 5), one_minus_a1, digits - 2)
    with mpmath.workdps(digits + 10):
        ref = mpmath.quad(lambda t: mpmath.sech(t) ** 2 * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf])
    ck.close("tanh: a1 = E[tanh'(xi)] (independent quadrature)", tanh.a_mpf(1, digits), ref, digits - 2)
    poly = Nonlinearity("poly2")
    parseval = sum(poly.a(k) ** 2 / sp.factorial(k) for k in range(0, 5))
    ck.symbolic("poly2: Parseval nu = sum a_k^2/k!", poly.nu - parseval)
    ck.add("only a1, nu, d enter the limit: the fixed point has no other Hermite symbol", "symbolic",
           {s.name for s in _fixed_point_symbols()} <= {"gamma", "c", "a_1", "nu", "d"},
           ", ".join(sorted(s.name for s in _fixed_point_symbols())))
    # nonlinear kernel vs Gaussian-equivalent kernel, same tokens law
    n, trials = (256, 8) if quick else (1024, 12)
    gammas = [0.05, 0.5]
    for name, c in (("tanh", 0.5), ("relu", 2.0), ("cos", 0.5)):
        f = Nonlinearity(name)
        a1 = float(f.a_mpf(1, 15))
        b = math.sqrt(max(float(f.nu_mpf(15)) - a1**2, 0.0))
        geo = Geometry(snr=1) if name != "cos" else Geometry(snr="1/4")
        sim = simulate(f.numpy(), n, c, gammas, geo, trials=trials, seed=9, progress=False)
        m_eq, se_eq = _equivalent_kernel_errors((a1, b, 0.0), n, c, gammas, geo, trials, seed=10)
        for i, g in enumerate(gammas):
            se = math.hypot(sim["attention"]["se"][i], se_eq[i])
            # two-sample: k = 3 on the combined se, slack 0.01 for the finite-size a_2 term (docs/theory.md section 2.2)
            ck.statistical(f"{name}: nonlinear K vs Gaussian-equivalent K, n={n}, c={c}, gamma={g}",
                           sim["attention"]["mean"][i], se, m_eq[i], k=3, slack=0.01)
    return ck


def _fixed_point_symbols():
    F, _, _ = S.fixed_point_system()
    return F.free_symbols - set(S.G_SYMBOLS)


def latex() -> str:
    """This derivation's result as LaTeX."""
    return "\n\n".join([
        MODEL,
        r"With $\xi \sim \mathcal{N}(0, 1)$, $\mathrm{He}_k$ the probabilists' Hermite polynomials and $f$ "
        r"centered ($a_0 = \mathbb{E} f(\xi) = 0$), the Hermite data of $f$ are",
        align(r"a_k &= \mathbb{E}[f(\xi)\, \mathrm{He}_k(\xi)], \qquad \nu = \mathbb{E}[f(\xi)^2], \qquad"
              r" d = \lim_{t \to +\infty} f(t)/t"),
        r"($d$ only for a kept diagonal; $d = 0$ when the diagonal of $K$ is set to 0). In the limit, $K$ may be "
        r"replaced by its Gaussian equivalent, with $\mathcal{G}$ a symmetric Gaussian matrix independent of $X$ "
        r"(zero diagonal, off-diagonal entries of variance 1):",
        align(r"K &\simeq a_1 \Bigl(\frac{X^\top W X}{p} - I_n\Bigr) + \sqrt{\nu - a_1^2}\, "
              r"\frac{\mathcal{G}}{\sqrt{p}} + d\, I_n"),
        r"Only $a_1$, $\nu$ and $d$ enter the limits of $E_A$.",
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
