r"""Rank-one alignment: ``w_K`` and ``w_Q`` parallel to ``mu``.

Claim.  With ``w_K = kappa_K mu/||mu||``, ``w_Q = kappa_Q mu/||mu||`` and
``beta = a_1 (1 + w_K^T w_Q)/c``, ``Delta = [[0, beta, 0], [beta, 0, 0], [0, 0, 1]]``,

.. math::

    \frac{1}{n} y^T Q y \to \varphi = G_{11} - \|\mu\|^2\, g_1^T \Delta
        \bigl(I_3 + (1 + \|\mu\|^2)\, G \Delta\bigr)^{-1} g_1,
    \qquad E_A = -\gamma^2 \partial_\gamma \varphi,

an explicit rational function of the noise-only block traces ``G`` (``g_1`` its
first column).  The weights enter only through ``w_K^T w_Q``: two aligned
geometries with the same ``w_K^T w_Q`` have the same limit.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.latex_blocks import HERMITE, MODEL, align, fixed_point
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit

NAME = "aligned"


def aligned_geometry(snr, kk, kq):
    """The geometry with ``w_K = kk mu/|mu|`` and ``w_Q = kq mu/|mu|`` (aligned with the signal), exact
    where ``sqrt(snr) kk`` and ``sqrt(snr) kq`` are rational.

    >>> aligned_geometry(4, 1, 2).as_dict()["muwq"]
    Fraction(4, 1)
    """
    snr, kk, kq = sp.Rational(snr), sp.Rational(kk), sp.Rational(kq)
    r = sp.sqrt(snr)
    return Geometry(snr=str(snr), wk2=str(kk**2), wq2=str(kq**2), wkwq=str(kk * kq),
                    muwk=str(r * kk) if (r * kk).is_Rational else None, muwq=str(r * kq) if (r * kq).is_Rational else None)


def run(quick: bool = False, digits: int = 50) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    r, kK, kQ = sp.symbols("r kappa_K kappa_Q", real=True)
    coords = (r, 0, 0, kK, 0, 0, kQ, 0, 0)
    D = S.woodbury_D(coords)
    c4 = sp.Matrix([r, 1, 0, 0])
    beta = S.a1 * (1 + kK * kQ) / S.c
    Delta = sp.Matrix([[0, beta, 0], [beta, 0, 0], [0, 0, 1]])
    U = sp.kronecker_product(sp.eye(3), c4)
    rest = sp.zeros(12, 12)
    for i in (2, 3):   # the identity parts on xi_2, xi_3: decoupled from y (H is diagonal in the basis index)
        rest[8 + i, 8 + i] = 1
        rest[i, 4 + i] = rest[4 + i, i] = S.a1 / S.c
    ck.symbolic("aligned: D = (I_3 (x) C) Delta (I_3 (x) C)^T + (terms on xi_2, xi_3 only)",
                (D - U * Delta * U.T - rest).norm() ** 2)
    gm = S.block_trace_matrix()
    phi_c = S.phi_compressed(gm, sp.Matrix([r]), Delta, sp.Matrix([[1 + r**2]]))
    phi = S.aligned_phi().subs({S.snr: r**2, S.wkwq: kK * kQ})
    ck.symbolic("Woodbury through the factorization gives the stated closed form", sp.cancel(phi_c - phi))
    ck.symbolic("snr = 0: varphi = G11 (weights without signal do not matter)", S.aligned_phi().subs(S.snr, 0) - gm[0, 0])
    # closed form vs general route at 50 digits
    tanh = {"a1": "0.6057055096021588", "nu": "0.3942944903978412", "d": 1}
    pts = [("1/2", "0.05", (1, "3/2", "3/2"), "zero"), ("2", "1", (4, 1, "-1/2"), "zero"),
           ("3", "0.01", ("9/4", 2, "1/2"), "keep")]
    if quick:
        pts = pts[:2]
    for c, g, geo, diag in pts:
        G = aligned_geometry(*geo)
        a = attention_limit(tanh, c, [g], G, diagonal=diag, digits=digits)[0]
        b = attention_limit(tanh, c, [g], G, diagonal=diag, digits=digits, route="general")[0]
        ck.close(f"closed form == general Woodbury, c={c}, gamma={g}, geometry={geo}, {diag}", a, b, digits - 10)
    # only w_K^T w_Q matters
    a = attention_limit(tanh, "1/2", ["0.1"], aligned_geometry(1, 2, "1/2"), digits=digits, route="general")[0]
    b = attention_limit(tanh, "1/2", ["0.1"], aligned_geometry(1, 1, 1), digits=digits, route="general")[0]
    ck.close("same w_K^T w_Q = 1, (kappa_K, kappa_Q) = (2, 1/2) vs (1, 1): same E_A", a, b, digits - 10)
    # simulation
    n, trials = (256, 6) if quick else (1024, 10)
    geo = aligned_geometry(1, 1, 1)
    th = attention_limit(tanh, "1/2", ["0.1", "1"], geo, digits=15)
    sim = simulate(np.tanh, n, 0.5, [0.1, 1], geo, trials=trials, seed=5, progress=False)
    for i, g in enumerate(("0.1", "1")):
        ck.statistical(f"tanh aligned (snr=1, w_K=w_Q=mu) vs simulation n={n}, gamma={g}",
                       sim["attention"]["mean"][i], sim["attention"]["se"][i], th[i], k=3, slack=0.01)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return "\n\n".join([
        MODEL, HERMITE,
        r"Aligned weights: $w_K = \kappa_K \mu/\|\mu\|$ and $w_Q = \kappa_Q \mu/\|\mu\|$.",
        fixed_point(),
        r"$g_1 = (G_{11}, G_{12}, G_{13})^\top$ is the first column of $G$. With",
        align(r"\beta &= \frac{a_1 (1 + w_K^\top w_Q)}{c}, \qquad "
              r"\Delta = \begin{pmatrix} 0 & \beta & 0 \\ \beta & 0 & 0 \\ 0 & 0 & 1 \end{pmatrix}"),
        "the limits are",
        align(r"\frac{1}{n} y^\top Q y &\to \varphi = G_{11} - \|\mu\|^2\, g_1^\top \Delta "
              r"\bigl(I_3 + (1 + \|\mu\|^2) G \Delta\bigr)^{-1} g_1",
              r"E_A(\gamma) &\to -\gamma^2 \partial_\gamma \varphi"),
        r"The weights enter only through $w_K^\top w_Q$.",
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
