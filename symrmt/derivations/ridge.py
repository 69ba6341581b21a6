r"""Ridge regression on the raw tokens: the limit of ``E_RR(gamma)`` and its ridgeless limit.

Claim.  With ``m = m(-gamma)`` the positive root of
``gamma m^2 + (gamma + c - 1) m - 1 = 0`` (Marchenko-Pastur),

.. math::

    \frac{1}{n} y^T Q_0 y \to \frac{m (1 + m)}{1 + (1 + \|\mu\|^2) m}, \qquad
    E_{RR}(\gamma) = -\gamma^2 \partial_\gamma \frac{m (1 + m)}{1 + (1 + \|\mu\|^2) m},

and ``E_RR(0+) = (1 - c)/(1 + ||mu||^2)`` for ``c < 1``, ``0`` for ``c > 1``.

Route: rotate ``mu`` to ``e_1``; ``X^T X / n = Z'^T Z' / n + v v^T / n`` with
``v = ||mu|| y + xi`` independent of ``Z'``; Sherman-Morrison in the basis
``[y, xi]/sqrt(n)``, where the compressed Marchenko-Pastur resolvent is ``m I_2``.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.latex_blocks import MODEL, align
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit, ridge_limit

NAME = "ridge"


def run(quick: bool = False, digits: int = 40) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m, g, c, snr = S.m, S.gamma, S.c, S.snr
    root = S.mp_root()
    # 1. the root solves the Marchenko-Pastur quadratic
    ck.symbolic("MP root solves gamma m^2 + (gamma+c-1) m - 1 = 0", S.mp_quadratic().subs(m, root))
    # 2. positive branch and m <= 1/gamma at z = -gamma, on a grid of exact points
    pts = [(sp.Rational(a), sp.Rational(b)) for a in ("1/4", "1/2", "2", "10") for b in ("1/1000", "1/10", "1", "10")]
    ok = all(0 < root.subs({c: cc, g: gg}).evalf(30) <= 1 / gg for cc, gg in pts)
    ck.add("physical root: 0 < m(-gamma) <= 1/gamma on a 4x4 grid", "precision", ok, f"{len(pts)} points")
    # 3. Sherman-Morrison form
    phi = S.ridge_quadratic_form()
    ck.symbolic("y^T Q0 y/n = m(1+m)/(1+(1+snr)m)", phi - m * (1 + m) / (1 + (1 + snr) * m))
    # 4. implicit derivative == explicit derivative of the closed form
    E_closed = S.ridge_error_closed_form()
    E_explicit = -g**2 * sp.diff(phi.subs(m, root), g)
    val_pts = [{c: sp.Rational(1, 2), g: sp.Rational(1, 10), snr: 1}, {c: 3, g: sp.Rational(1, 3), snr: 4}]
    diff = max(abs(sp.N((E_closed - E_explicit).subs(p), 50)) for p in val_pts)
    ck.add("E_RR = -gamma^2 d/dgamma(y^T Q0 y/n): implicit == explicit derivative", "precision",
           diff < sp.Float(10) ** -45, f"max diff {sp.N(diff, 3)}")
    # 5. snr = 0 reduces to the Marchenko-Pastur error -gamma^2 m'(gamma)
    mp_err = -g**2 * sp.diff(root, g)
    d0 = max(abs(sp.N((E_closed.subs(snr, 0) - mp_err).subs(p), 50)) for p in val_pts)
    ck.add("snr = 0 reduces to -gamma^2 dm/dgamma", "precision", d0 < sp.Float(10) ** -45, f"max diff {sp.N(d0, 3)}")
    # 6. ridgeless limits, c < 1 and c > 1
    u = sp.Symbol("u", positive=True)
    below = sp.limit(E_closed.subs(c, 1 / (1 + u)), g, 0, "+")
    above = sp.limit(E_closed.subs(c, 1 + u), g, 0, "+")
    ck.symbolic("ridgeless c < 1: E_RR(0+) = (1-c)/(1+snr)", below - (1 - 1 / (1 + u)) / (1 + snr))
    ck.symbolic("ridgeless c > 1: E_RR(0+) = 0", above)
    # 7. numeric: 0 <= E <= 1, monotone in gamma, digits at two precisions
    gammas = ["1e-6", "1e-3", "0.01", "0.1", "1", "10", "100"]
    for cc in ("1/4", "2"):
        vals = ridge_limit(cc, gammas, snr=1, digits=digits)
        mono = all(0 <= a <= b <= 1 for a, b in zip(vals, vals[1:]))
        ck.add(f"0 <= E_RR <= 1 and nondecreasing in gamma (c={cc})", "precision", mono, f"{len(vals)} gammas")
        hi = ridge_limit(cc, gammas, snr=1, digits=digits + 20)
        ck.add(f"{digits} digits == {digits + 20} digits (c={cc})", "precision",
               all(abs(a - b) <= mpmath.mpf(10) ** (-digits + 1) * b for a, b in zip(vals, hi)), f"{digits} digits")
    lim = ridge_limit("1/4", ["1e-12"], snr=3, digits=30)[0]
    ck.close("E_RR(1e-12) -> (1-c)/(1+snr) at c=1/4, snr=3", lim, mpmath.mpf(3) / 16, 10)
    # 8. the general attention machinery with K = I (a1 = 0, nu = 0, d = 1, keep) is ridge regression
    geo = Geometry(snr="3/2")
    for cc in ("1/2", "3"):
        att = attention_limit({"a1": 0, "nu": 0, "d": 1}, cc, ["0.05", "1"], geo, diagonal="keep", digits=digits)
        rr = ridge_limit(cc, ["0.05", "1"], snr="3/2", digits=digits)
        for a, b, gg in zip(att, rr, ("0.05", "1")):
            ck.close(f"attention solver with K = I equals ridge (c={cc}, gamma={gg})", a, b, digits - 3)
    # 9. simulation
    n, trials = (256, 8) if quick else (2048, 10)

    for cc, s in (("1/2", 1), ("2", 4)):
        sim = simulate(np.tanh, n, float(sp.Rational(cc)), [0.01, 0.1, 1], Geometry(snr=s), trials=trials, seed=7,
                       progress=False)
        th = ridge_limit(cc, [0.01, 0.1, 1], snr=s, digits=15)
        for i, gg in enumerate((0.01, 0.1, 1)):
            # k = 3 (two-sided 0.3% per check), slack 0.01 for O(n^-1/2) finite-size effects at small n
            ck.statistical(f"E_RR vs simulation n={n} c={cc} snr={s} gamma={gg}", sim["ridge"]["mean"][i],
                           sim["ridge"]["se"][i], th[i], k=3, slack=0.01 if quick else 0.003)
    return ck


def latex() -> str:
    """The result as LaTeX ``align`` lines."""
    E = S.ridge_error_in_m()
    return "\n\n".join([
        MODEL,
        r"Ridge regression on the tokens: $Q_0(\gamma) = (X^\top X/n + \gamma I_n)^{-1}$, so "
        r"$E_{RR}(\gamma) = \frac{\gamma^2}{n} y^\top Q_0^2 y$. With $m = m(-\gamma)$ the Marchenko-Pastur "
        r"Stieltjes transform, the positive root of",
        align(r"\gamma m^2 + (\gamma + c - 1) m - 1 &= 0, \quad m > 0"),
        r"the limits are",
        align(r"\frac{1}{n} y^\top Q_0 y &\to " + sp.latex(S.ridge_quadratic_form()),
              r"E_{RR}(\gamma) &\to " + sp.latex(E),
              r"E_{RR}(0^+) &= \frac{1 - c}{1 + \|\mu\|^2} \ (c < 1), \qquad E_{RR}(0^+) = 0 \ (c > 1)"),
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
