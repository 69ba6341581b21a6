r"""Rank-r weights ``W = alpha I + sum_{j=1}^r w_K^j (w_Q^j)^T``.

Claim.  Rotate ``(mu, w_K^1..w_K^r, w_Q^1..w_Q^r)`` into the first ``k = 2r+1``
coordinates (rows of ``B`` with ``B B^T`` = their Gram matrix), let ``m`` be the
coordinates of ``mu``, ``C = [m^T; I_k]`` and ``A = I_k + sum_j k_j q_j^T``.  For
``alpha = 1`` the low-rank part of the pencil is ``U D U^T`` with the
``3(k+1)``-square

.. math::

    D = \begin{pmatrix} 0 & \frac{a_1}{c} C A^\top C^\top & 0 \\
        \frac{a_1}{c} C A C^\top & 0 & 0 \\ 0 & 0 & C C^\top \end{pmatrix},

and ``E_A = -gamma^2 x^T (partial_gamma Gm (x) I_{k+1}) x``, ``x = (I + D H)^{-1} e``
(the rank-one result with ``k = 3``).  The limit depends on the vectors only
through their Gram matrix (``D`` transforms by a similarity that commutes with
``H = Gm (x) I`` under a rotation of the basis).

For ``alpha != 1``: ``X^T W X = alpha X^T (I + sum_j (w_K^j/alpha) (w_Q^j)^T) X``, so
the limit is that of ``f_alpha(t) = f(alpha t)`` with the weights
``I + sum_j (w_K^j/alpha)(w_Q^j)^T``.  The Hermite data of ``f_alpha`` are those of
``f`` under ``N(0, alpha^2)``, and ``d_alpha = alpha d``.  E.g. for ``erf``,
``a_1(alpha) = 2 alpha / sqrt(pi (1 + 2 alpha^2))``.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.hermite import T
from symrmt.latex_blocks import HERMITE, MODEL, align, fixed_point
from symrmt.models.attention.geometry import LowRankGeometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit, scaled_nonlinearity

NAME = "lowrank"


def _gram(vectors):
    return [[sum((a * b for a, b in zip(u, v)), F(0)) for v in vectors] for u in vectors]


def _vectors(r: int, seed: int, align=F(1, 2)):
    """Exact rational ``(mu, w_K^1..r, w_Q^1..r)`` in ``R^{2r+1}``, weights partly along ``mu``."""
    rng = np.random.default_rng(seed)
    k = 2 * r + 1
    mu = [F(int(x), 6) for x in rng.integers(-3, 4, size=k)]
    mu[0] += 1
    vecs = [mu]
    for _ in range(2 * r):
        vecs.append([F(int(x), 12) + align * m for x, m in zip(rng.integers(-3, 4, size=k), mu)])
    return vecs


def _split(vecs, r):
    """``k_j q_j^T = (k_j/2) q_j^T + (k_j/2) q_j^T``: the same ``W`` written with ``2r`` terms."""
    mu, ks, qs = vecs[0], vecs[1:1 + r], vecs[1 + r:]
    half = [[x / 2 for x in v] for v in ks]
    return [mu] + [h for h in half for _ in (0, 1)] + [q for q in qs for _ in (0, 1)]


def run(quick: bool = False, digits: int = 40) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    # --- symbolic: the rank-2 D depends on the terms only through W, and on the basis only up to similarity
    r = 2
    k = 2 * r + 1
    syms = S.lowrank_coords(r)
    rows = [list(syms[i * k:(i + 1) * k]) for i in range(k)]
    mu, k1, k2, q1, q2 = rows
    zero = [0] * k
    halves = [mu, [x / 2 for x in k1], [x / 2 for x in k1], q1, q1]
    merged = [mu, k1, zero, q1, zero]
    D = S.woodbury_D(r=r)
    sub = lambda rr: {s: v for s, v in zip(syms, [x for row in rr for x in row])}  # noqa: E731
    ck.symbolic("rank 2: D(mu, k/2, k/2, q, q) = D(mu, k, 0, q, 0) (only sum_j k_j q_j^T enters)",
                (D.subs(sub(halves)) - D.subs(sub(merged))).norm() ** 2)
    # rotate coordinates 1, 2 by the rational rotation [[3/5, -4/5], [4/5, 3/5]]
    O = sp.eye(k)
    O[0, 0], O[0, 1], O[1, 0], O[1, 1] = sp.Rational(3, 5), sp.Rational(-4, 5), sp.Rational(4, 5), sp.Rational(3, 5)
    rotated = [list(sp.Matrix([row]) * O.T) for row in rows]
    T3 = sp.kronecker_product(sp.eye(3), sp.diag(1, O))
    ck.symbolic("rank 2: rotating the basis, D(B O^T) = T D(B) T^T with T = I_3 (x) diag(1, O) (Gram only)",
                (sp.expand(D.subs(sub(rotated), simultaneous=True)) - sp.expand(T3 * D * T3.T)).norm() ** 2)
    # --- alpha: Hermite data of f(alpha t)
    for alpha in (sp.Rational(1, 2), sp.Integer(2)):
        nl = scaled_nonlinearity("erf", F(int(sp.numer(alpha)), int(sp.denom(alpha))))
        ck.symbolic(f"alpha = {alpha}: a_1 of erf(alpha t) = 2 alpha/sqrt(pi (1 + 2 alpha^2))",
                    nl.a(1) - 2 * alpha / sp.sqrt(sp.pi * (1 + 2 * alpha**2)))
    ck.symbolic("f_alpha is f(alpha t)", scaled_nonlinearity("tanh", 3).expr - sp.tanh(3 * T))
    # --- numeric identities at high precision
    vecs4 = _vectors(4, seed=3)
    geo4 = LowRankGeometry(_gram(vecs4))
    geo8 = LowRankGeometry(_gram(_split(vecs4, 4)))
    a = attention_limit("tanh", "1/2", ["0.1"], geo4, digits=digits)[0]
    b = attention_limit("tanh", "1/2", ["0.1"], geo8, digits=digits)[0]
    ck.close("rank 8 (each of 4 terms split in two) == rank 4, tanh, c=1/2, gamma=0.1", a, b, digits - 2)
    vecs2 = _vectors(2, seed=5)
    geo_a = LowRankGeometry(_gram(vecs2), alpha=2)
    geo_s = LowRankGeometry(_gram([vecs2[0]] + [[x / 2 for x in v] for v in vecs2[1:3]] + vecs2[3:]))
    a = attention_limit("t", "2", ["0.2"], geo_a, digits=digits)[0]
    b = attention_limit("t", "2", ["0.05"], geo_s, digits=digits)[0]
    ck.close("f = t: E_A(gamma; 2 I + L) = E_A(gamma/4; I + L/2) (K is homogeneous)", a, b, digits - 2)
    # --- simulation
    n, trials = (256, 8) if quick else (1024, 16)
    cases = [(2, 1, "tanh", np.tanh, "2"), (4, 1, "tanh", np.tanh, "1/2"), (2, 2, "tanh", np.tanh, "1/2")]
    if quick:
        cases = cases[:1]
    gam = [0.1, 1.0]
    for r_, alpha, fname, fnp, c in cases:
        geo = LowRankGeometry(_gram(_vectors(r_, seed=10 + r_)), alpha=alpha)
        th = attention_limit(fname, c, gam, geo, digits=15)
        sim = simulate(fnp, n, c, gam, geo, trials=trials, seed=7, progress=False)
        for i, g in enumerate(gam):
            ck.statistical(f"r={r_}, alpha={alpha}, {fname}, c={c}: theory vs simulation n={n}, gamma={g}",
                           sim["attention"]["mean"][i], sim["attention"]["se"][i], th[i],
                           k=4, slack=round(0.01 + 0.01 * float(th[i]), 4))
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return "\n\n".join([
        MODEL.replace(r"$W = I_p + w_K w_Q^\top$", r"$W$ below"), HERMITE,
        r"Rank-$r$ weights, with the scale $\alpha > 0$ moved into $f$:",
        align(r"W &= \alpha I_p + \sum_{j=1}^{r} w_K^j (w_Q^j)^\top",
              r"f(X^\top W X/\sqrt p) &= f_\alpha\bigl(X^\top (W/\alpha) X/\sqrt p\bigr), \qquad "
              r"f_\alpha(t) = f(\alpha t)"),
        r"so take $\alpha = 1$ (and the Hermite data of $f_\alpha$). In an orthonormal basis of the span of "
        r"$\mu, w_K^1, \dots, w_K^r, w_Q^1, \dots, w_Q^r$ (dimension at most $2r + 1$) let "
        r"$m, k_j, q_j \in \mathbb{R}^{2r+1}$ be their coordinates.",
        fixed_point(),
        r"$e$ is the first vector of the standard basis of $\mathbb{R}^{3(2r+2)}$, and the zero blocks are "
        r"$(2r+2) \times (2r+2)$:",
        align(r"C &= \begin{pmatrix} m^\top \\ I_{2r+1} \end{pmatrix}, \qquad "
              r"A = I_{2r+1} + \sum_{j=1}^{r} k_j q_j^\top",
              r"D &= \begin{pmatrix} 0 & \frac{a_1}{c} C A^\top C^\top & 0 \\ \frac{a_1}{c} C A C^\top & 0 & 0 "
              r"\\ 0 & 0 & C C^\top \end{pmatrix}, \qquad H = G \otimes I_{2r+2}",
              r"x &= (I + D H)^{-1} e, \qquad "
              r"E_A(\gamma) \to -\gamma^2\, x^\top \bigl(\partial_\gamma G \otimes I_{2r+2}\bigr) x"),
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
