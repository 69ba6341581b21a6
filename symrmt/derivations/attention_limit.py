r"""The limit of the Attention interpolation error (the general result).

Claim.  Let ``G`` be the 3x3 block-trace matrix of the inverse of the pencil
``L = [[gamma I, K^T, 0], [K, 0, I], [0, I, c S]]`` of the Gaussian-equivalent
kernel.  It solves the operator-valued fixed point

.. math:: G = \bigl(L_0 + R(-G)\bigr)^{-1}, \qquad
          R(B) = A_S (I - B A_S / c)^{-1} + \tfrac{1}{c} A_G B A_G,

on the branch connected to ``G ~ diag(1/gamma, [[-c, 1], [1, 0]])`` as
``gamma -> oo``; then ``y^T Q y / n -> varphi`` (Woodbury, :mod:`symrmt.models.attention.equations`) and
``E_A = -gamma^2 d varphi/d gamma`` with ``dG/dgamma`` by implicit differentiation.
"""

from __future__ import annotations

import mpmath
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.hermite import Nonlinearity
from symrmt.latex_blocks import HERMITE, MODEL, align, fixed_point
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit

NAME = "attention_limit"


def run(quick: bool = False, digits: int = 40) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    # 1. the pencil: top-left block of L^{-1} is (gamma + c K^T S K)^{-1} (exact, 2x2 blocks)
    K = sp.Matrix([[sp.Rational(1, 3), 2], [-1, sp.Rational(1, 2)]])
    Sm = sp.Matrix([[2, sp.Rational(1, 2)], [sp.Rational(1, 2), 1]])
    g, c = sp.Rational(3, 7), sp.Rational(5, 4)
    I2, Z2 = sp.eye(2), sp.zeros(2, 2)
    L = sp.Matrix(sp.BlockMatrix([[g * I2, K.T, Z2], [K, Z2, I2], [Z2, I2, c * Sm]]))
    ck.symbolic("pencil: (L^{-1})_{11} = (gamma + c K^T S K)^{-1} (exact instance)",
                (L.inv()[:2, :2] - (g * I2 + c * K.T * Sm * K).inv()).norm() ** 2)
    # 2. the fixed point at gamma -> oo
    F = S.fixed_point_polynomial()
    ginf = {S.G_SYMBOLS[0]: 1 / S.gamma, S.G_SYMBOLS[1]: 0, S.G_SYMBOLS[2]: 0,
            S.G_SYMBOLS[3]: -S.c, S.G_SYMBOLS[4]: 1, S.G_SYMBOLS[5]: 0}
    lead = [sp.limit(sp.expand(F[i, j].subs(ginf)) / S.gamma, S.gamma, sp.oo) for i in range(3) for j in range(3)]
    ck.add("gamma -> oo: diag(1/gamma, [[-c,1],[1,0]]) solves the fixed point to leading order", "symbolic",
           all(sp.simplify(x) == 0 for x in lead), f"{sum(1 for x in lead if sp.simplify(x) == 0)}/9 leading terms vanish")
    # 3. derivative of the Woodbury form: d/dg [H (I + D H)^{-1}] = (I + H D)^{-1} H' (I + D H)^{-1}
    t = sp.Symbol("t")
    h = sp.Matrix([[1 + t, t**2], [t**2, 2 - t]])
    Dm = sp.Matrix([[sp.Rational(1, 2), 1], [1, -3]])
    lhs = sp.diff(h * (sp.eye(2) + Dm * h).inv(), t)
    rhs = (sp.eye(2) + h * Dm).inv() * sp.diff(h, t) * (sp.eye(2) + Dm * h).inv()
    ck.symbolic("d/dgamma [H (I+DH)^{-1}] = (I+HD)^{-1} H' (I+DH)^{-1}", sp.simplify((lhs - rhs).norm() ** 2))
    # 4. implicit derivative vs a central difference at high precision
    tanh = {"a1": "0.6057055096021588", "nu": "0.3942944903978412", "d": 1}
    geo = Geometry(snr="3/2", wk2=1, wq2="1/2", wkwq="1/4", muwk="1/2", muwq="-1/3")
    for route in ("general", None):
        with mpmath.workdps(digits + 30):
            gam = mpmath.mpf("0.2")
            hh = mpmath.mpf(10) ** (-(digits // 2))
            pts = attention_limit(tanh, "3/2", [gam - hh, gam + hh, gam], geo, diagonal="keep",
                                  digits=digits, details=True, route=route)
            fd = -(gam**2) * (pts[1].quadratic_form - pts[0].quadratic_form) / (2 * hh)
        ck.close(f"E_A (implicit derivative) == central difference, route={route or 'auto'}", pts[2].error, fd,
                 digits // 2 - 4)
    # 5. bounds and monotonicity in gamma
    gammas = ["1e-4", "1e-3", "0.01", "0.1", "1", "10"]
    for f, cc, gg, diag in (("tanh", "1/2", geo, "zero"), ("relu", "2", Geometry(snr=4, wk2=1, wq2=1, wkwq=1,
                            muwk=2, muwq=2), "keep"), ("cos", "3", Geometry(snr=1), "zero")):
        vals = attention_limit(f, cc, gammas, gg, diagonal=diag, digits=20)
        ok = all(0 <= a <= b <= 1 for a, b in zip(vals, vals[1:]))
        ck.add(f"0 <= E_A <= 1, nondecreasing in gamma ({f}, c={cc}, {diag})", "precision", ok,
               " ".join(mpmath.nstr(v, 4) for v in vals))
    # 6. simulation: general geometry (rank 3), both diagonals
    n, trials = (256, 6) if quick else (2048, 8)
    for fname, cc, diag in (("tanh", 0.5, "zero"), ("erf", 2.0, "keep"), ("relu", 0.5, "keep")):
        f = Nonlinearity(fname)
        geo3 = Geometry(snr=1, wk2=1, wq2="1/2", wkwq="1/4", muwk="1/2", muwq="-1/3")
        th = attention_limit(f, str(cc), [0.01, 0.1, 1], geo3, diagonal=diag, digits=15)
        sim = simulate(f.numpy(), n, cc, [0.01, 0.1, 1], geo3, diagonal=diag, trials=trials, seed=21, progress=False)
        for i, gg in enumerate((0.01, 0.1, 1)):
            # k = 3 (0.3% two-sided per check); slack = 1% + 0.002 (the project's acceptance rule) at n >= 2048,
            # 0.01 at n = 256 for the O(n^-1/2) finite-size terms
            slack = 0.01 if quick else 0.002 + 0.01 * float(th[i])
            ck.statistical(f"{fname} {diag} c={cc} rank-3 geometry gamma={gg}: theory vs simulation n={n}",
                           sim["attention"]["mean"][i], sim["attention"]["se"][i], th[i], k=3, slack=slack)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return "\n\n".join([
        MODEL, HERMITE, fixed_point(),
        r"In an orthonormal basis of $\operatorname{span}(\mu, w_K, w_Q)$ let $m, k, q \in \mathbb{R}^3$ be the "
        r"coordinates of $\mu, w_K, w_Q$, $C = \begin{pmatrix} m^\top \\ I_3 \end{pmatrix}$ and "
        r"$A = I_3 + k q^\top$; $0_4$ is the $4 \times 4$ zero matrix and $e$ the first vector of the standard "
        r"basis of $\mathbb{R}^{12}$:",
        align(r"D &= \begin{pmatrix} 0_4 & \frac{a_1}{c} (C A C^\top)^\top & 0_4 \\ \frac{a_1}{c} C A C^\top "
              r"& 0_4 & 0_4 \\ 0_4 & 0_4 & C C^\top \end{pmatrix}, \qquad H = G \otimes I_4",
              r"x &= (I_{12} + D H)^{-1} e, \qquad \frac{1}{n} y^\top Q y \to \varphi = e^\top H x",
              r"E_A(\gamma) &\to -\gamma^2 \partial_\gamma \varphi = "
              r"-\gamma^2\, x^\top (\partial_\gamma G \otimes I_4)\, x"),
        r"Every symbol written out: $\texttt{symrmt latex theorem1 --explicit}$.",
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
