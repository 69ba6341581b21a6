r"""Cross-check: the linear kernel ``f(t) = t`` with the diagonal kept.

Claim.  For ``f(t) = t`` and ``diagonal="keep"`` the kernel is exactly
``K = X^T W X / p`` (no Gaussian-equivalence approximation: ``a_1 = nu = d = 1``,
``b = 0``).  With ``mu = 0, W = I`` the matrices ``K = S`` and ``S`` commute, so

.. math::

    E_A(\gamma) = \gamma^2 \int \frac{d\mathrm{MP}_{1/c}(\lambda)}{(c \lambda^3 + \gamma)^2},
    \qquad \frac{1}{n}\operatorname{tr} Q = \int \frac{d\mathrm{MP}_{1/c}(\lambda)}{c \lambda^3 + \gamma},

(Marchenko-Pastur law of ``S = Z^T Z / p``, ratio ``n/p = 1/c``, atom ``1 - c`` at 0 when ``c < 1``),
and the same with ``c lambda (lambda - 1)^2`` for the zero diagonal ``K = S - I``.
These one-dimensional integrals, evaluated by quadrature at 50 digits, check the
general operator-valued fixed point independently.  With a signal and weights,
the exact finite model is simulated (no approximation of ``K`` involved).
"""

from __future__ import annotations

import mpmath
import numpy as np

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.hermite import Nonlinearity
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit

NAME = "linear_kernel"


def mp_integral(c, gamma, psi, power: int, dps: int):
    """``int dMP_{1/c}(lambda) / (psi(lambda) + gamma)^power`` by tanh-sinh quadrature.

    Independent of the package's solver: the Marchenko-Pastur density of
    ``S = Z^T Z/p`` (ratio ``lam = n/p = 1/c``) is integrated with the change of
    variables ``lambda = (a+b)/2 + (b-a)/2 cos(theta)``, which removes the square-root endpoints.
    """
    with mpmath.workdps(dps + 15):
        c, gamma = mpmath.mpf(c), mpmath.mpf(gamma)
        lam = 1 / c
        a, b = (1 - mpmath.sqrt(lam)) ** 2, (1 + mpmath.sqrt(lam)) ** 2

        def integrand(th):
            x = (a + b) / 2 + (b - a) / 2 * mpmath.cos(th)
            dens = mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * lam * x)
            return dens * (b - a) / 2 * mpmath.sin(th) / (psi(x) + gamma) ** power

        # split where psi may vanish inside the support (lambda = 1 for the zero diagonal)
        pts = [mpmath.mpf(0), mpmath.pi / 2, mpmath.pi]
        if a < 1 < b:
            pts.append(mpmath.acos((2 - (a + b)) / (b - a)))
        val = mpmath.quad(integrand, sorted(pts))
        if lam > 1:   # atom at 0 of mass 1 - 1/lam = 1 - c
            val += (1 - 1 / lam) / (psi(mpmath.mpf(0)) + gamma) ** power
        return val


def run(quick: bool = False, digits: int = 50) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    lin = Nonlinearity("t")
    ck.add("f(t) = t: a1 = nu = d = 1 exactly (so b = 0: K is exactly X^T W X / p)", "symbolic",
           lin.a(1) == 1 and lin.nu == 1 and lin.d == 1, f"a1={lin.a(1)}, nu={lin.nu}, d={lin.d}")
    cases = [("1/2", "0.1"), ("2", "0.01"), ("1/4", "1"), ("5", "0.5")]
    if quick:
        cases = cases[:2]
    for diag, shift in (("keep", 0), ("zero", -1)):
        for c, g in cases:
            cc = mpmath.mpf(c.split("/")[0]) / (mpmath.mpf(c.split("/")[1]) if "/" in c else 1)
            with mpmath.workdps(digits + 15):
                psi = lambda x, cc=cc, shift=shift: cc * x * (x + shift) ** 2  # noqa: E731
                gam = mpmath.mpf(g)
                e_ref = gam**2 * mp_integral(cc, gam, psi, 2, digits)
                m_ref = mp_integral(cc, gam, psi, 1, digits)
            pt = attention_limit(lin, c, [g], Geometry(), diagonal=diag, digits=digits, details=True)[0]
            ck.close(f"{diag}: tr Q/n == MP integral, c={c}, gamma={g}", pt.stieltjes, m_ref, digits - 10)
            ck.close(f"{diag}: E_A == gamma^2 MP integral, c={c}, gamma={g}", pt.error, e_ref, digits - 10)
    # with signal and weights: the exact finite model
    n, trials = (256, 6) if quick else (1024, 10)
    geos = [Geometry(snr=1), Geometry(snr=2, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1),
            Geometry(snr=1, wk2=1, wq2="1/4", wkwq=0, muwk=0, muwq="1/2")]
    ident = np.positive
    for geo in geos:
        th = attention_limit(lin, "1/2", ["0.1"], geo, diagonal="keep", digits=15)[0]
        sim = simulate(ident, n, 0.5, [0.1], geo, diagonal="keep", trials=trials, seed=3, progress=False)
        ck.statistical(f"K = X^T W X/p exactly: theory vs simulation n={n}, geometry rank {geo.rank()}, snr={geo.snr}",
                       sim["attention"]["mean"][0], sim["attention"]["se"][0], th, k=3, slack=0.01)
    return ck


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
