r"""No linear component (``a_1 = 0``): what the error still depends on.

Claim.  When ``a_1 = 0``

.. math::

    \frac{1}{n} y^T Q y \to \varphi = G_{11} - \frac{\|\mu\|^2 G_{13}^2}{1 + (1 + \|\mu\|^2) G_{33}},
    \qquad E_A = -\gamma^2 \partial_\gamma \varphi,

where ``G`` is the noise-only block-trace matrix (which depends on ``c, gamma, nu, d`` only).

* The weights ``w_K, w_Q`` drop out entirely (they enter ``K`` only through ``a_1``).
* If ``d = 0`` (``diagonal="zero"``, or any bounded ``f``), ``G_13 = G_12 = 0``
  by the symmetry ``K -> -K`` and ``E_A`` equals the noise-only error: it depends on
  ``(c, gamma, nu)`` only, not on the signal.
* If ``d != 0`` (kept diagonal of an unbounded ``f``, e.g. centered ``|t|``),
  the signal does matter, through ``G_13 = -tau(K Q)``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.latex_blocks import HERMITE, MODEL, align, fixed_point
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit

NAME = "a1_zero"


def run(quick: bool = False, digits: int = 50) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    D = S.woodbury_D()
    D0 = D.subs(S.a1, 0)
    weights = set(S.WK) | set(S.WQ)
    ck.add("a1 = 0: the low-rank matrix D has no w_K, w_Q", "symbolic", not (D0.free_symbols & weights),
           f"free symbols {sorted(map(str, D0.free_symbols))}")
    mu = sp.Matrix(S.MU)
    C = sp.Matrix.vstack(mu.T, sp.eye(3))
    E33 = sp.zeros(3, 3)
    E33[2, 2] = 1
    ck.symbolic("a1 = 0: D = E_33 (x) C C^T", (D0 - sp.kronecker_product(E33, C * C.T)).norm() ** 2)
    # Woodbury with U = e_3 (x) C:  e^T H U = G13 mu^T,  U^T H U = G33 C^T C
    gm = S.block_trace_matrix()
    phi = gm[0, 0] - gm[0, 2] ** 2 * (mu.T * (sp.eye(3) + gm[2, 2] * (C.T * C)).inv() * mu)[0]
    s2 = sum(x**2 for x in S.MU)
    ck.symbolic("Woodbury reduces to G11 - G13^2 s/(1 + (1+s) G33), s = ||mu||^2",
                phi - S.a1_zero_phi().subs(S.snr, s2))
    # parity: K -> -K flips the sign of blocks (1,2), (1,3) when a1 = d = 0
    F = S.fixed_point_polynomial().subs({S.a1: 0, S.d: 0})
    flip = {S.G_SYMBOLS[1]: -S.G_SYMBOLS[1], S.G_SYMBOLS[2]: -S.G_SYMBOLS[2]}
    odd = {(0, 1), (0, 2), (1, 0), (2, 0)}
    parity = sum(((F[i, j].subs(flip, simultaneous=True) + (F[i, j] if (i, j) in odd else -F[i, j])) ** 2)
                 for i in range(3) for j in range(3))
    ck.symbolic("a1 = d = 0: fixed point is odd in (G12, G13) in blocks (1,2),(1,3), even elsewhere",
                sp.expand(parity))
    ck.symbolic("a1 = d = 0: G12 = G13 = 0 solves the odd equations identically",
                sum(F[i, j].subs({S.G_SYMBOLS[1]: 0, S.G_SYMBOLS[2]: 0}) ** 2 for i, j in odd))
    # numeric invariance
    cosf = {"a1": 0, "nu": (1 + mpmath.e**-2) / 2 - mpmath.e**-1}   # centered cos: nu = E[cos^2] - e^{-1}
    geos = [Geometry(), Geometry(snr=1), Geometry(snr=4, wk2=1, wq2=1, wkwq=1, muwk=2, muwq=2),
            Geometry(snr=2, wk2="9/4", wq2=1, wkwq="1/2", muwk="1/3", muwq=-1)]
    gam = ["0.05", "1"]
    for c in ("1/2", "2"):
        ref = attention_limit(cosf, c, gam, Geometry(), digits=digits)
        for geo in geos[1:]:
            for route in (None, "general"):
                val = attention_limit(cosf, c, gam, geo, digits=digits, route=route)
                for a, b, g in zip(val, ref, gam):
                    ck.close(f"d=0: E_A(snr={geo.snr}, rank {geo.rank()}) == E_A(noise only), c={c}, "
                             f"gamma={g}, route={route or 'closed'}", a, b, digits - 5)
    absf = {"a1": 0, "nu": 1 - 2 / mpmath.pi, "d": 1}   # centered |t|: a1 = 0, d = 1
    e0 = attention_limit(absf, "1/2", ["0.1"], Geometry(), diagonal="keep", digits=digits)[0]
    e1 = attention_limit(absf, "1/2", ["0.1"], Geometry(snr=1), diagonal="keep", digits=digits)[0]
    ck.add("d = 1 (keep, centered |t|): the signal does move E_A", "precision", abs(e1 - e0) > 1e-3,
           f"E_A(snr=1) - E_A(0) = {mpmath.nstr(e1 - e0, 6)}")
    ew = attention_limit(absf, "1/2", ["0.1"], Geometry(snr=1, wk2=1, wq2=4, wkwq=-1, muwk="1/2", muwq=0),
                         diagonal="keep", digits=digits, route="general")[0]
    ck.close("d = 1: the weights still drop out (general route)", ew, e1, digits - 5)
    # simulation: centered cos, the error does not move with the signal
    n, trials = (256, 6) if quick else (1024, 10)
    f = lambda t: np.cos(t) - np.exp(-0.5)  # noqa: E731
    th = attention_limit(cosf, "1/2", ["0.1"], Geometry(), digits=15)[0]
    for geo in (Geometry(), Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1)):
        sim = simulate(f, n, 0.5, [0.1], geo, trials=trials, seed=11, progress=False)
        # k = 3; slack 0.01 for the a_2 (t^2) finite-size term (docs/theory.md section 2.2)
        ck.statistical(f"centered cos vs noise-only theory, n={n}, snr={geo.snr}", sim["attention"]["mean"][0],
                       sim["attention"]["se"][0], th, k=3, slack=0.01)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return "\n\n".join([
        MODEL, HERMITE, "No linear component, $a_1 = 0$.", fixed_point(), "Then",
        align(r"\frac{1}{n} y^\top Q y &\to \varphi = " + sp.latex(S.a1_zero_phi()),
              r"E_A(\gamma) &\to -\gamma^2 \partial_\gamma \varphi",
              r"d = 0 \Rightarrow G_{12} = G_{13} = 0:\quad E_A &= -\gamma^2 \partial_\gamma G_{11}"),
        r"The weights $w_K, w_Q$ drop out; with $d = 0$ the signal $\mu$ does too.",
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
