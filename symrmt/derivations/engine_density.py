r"""Spectral densities from the trace engine: closed forms, a subordination solve, histograms at n = 2000;
and the Ginibre resolvent inside its spectrum.

Claims.

1. Marchenko-Pastur, ``W = Z.T*Z/n`` with ``Z`` ``p x n``, ``p = c n``: ``rho(x) = sqrt((b - x)(x - a))/(2 pi x)``
   on ``[a, b] = [(sqrt c - 1)^2, (sqrt c + 1)^2]``, with an atom of mass ``1 - c`` at 0 when ``c < 1``.
   ``symrmt density`` gives the density at interior points, both edges and the atom to 30 digits.
2. The free convolution of the semicircle ``G/sqrt(n)`` and ``W`` at ``c = 1/2``: the subordination
   ``G(z) = G_W(z - G(z))`` (the R-transform of the unit semicircle is ``g``; ``G_W`` the root of
   ``w G^2 - (w - c + 1) G + 1 = 0`` with ``Im G < 0``), solved here by mpmath, independently of the
   engine's pencil: equal to 30 digits at interior points.
3. Eigenvalue histograms at ``n = 2000`` (4 trials; quick: ``n = 300``) agree with the bin averages of the
   limit density within ``5 se + 0.01`` (quick ``0.03``; the slack is the finite-size bias of a bin,
   largest at the square-root edges, whose bins are excluded).
4. Ginibre, ``Z`` square: ``tau((gamma + Z/sqrt(n))^{-1}) -> gamma`` for ``|gamma| <= 1`` and ``1/gamma`` outside
   (the Brown measure is uniform on the unit disk).  The engine detects the non-normal inverse, finds
   that ``gamma + Z/sqrt(n)`` is not invertible on its homotopy path (the Gram test), solves the
   Hermitized pencil and gives ``gamma`` to 30 digits; a log-det Monte-Carlo at ``n = 1000`` agrees.
"""

from __future__ import annotations

import mpmath
import numpy as np

from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.engine import Model

NAME = "engine_density"


def _wishart(goe=False):
    m = Model()
    m.dim("p", "c*n")
    m.gaussian("Z", "p", "n")
    if goe:
        m.goe("G", "n")
    return m


def mp_density(c, x):
    """The Marchenko-Pastur density of ratio ``c`` at ``x`` (0 outside ``[(1-sqrt c)^2, (1+sqrt c)^2]``).

    >>> float(mp_density(1, 2))   # sqrt(x (4 - x))/(2 pi x) at c = 1
    0.15915494309189535
    """
    c, x = mpmath.mpf(c), mpmath.mpf(x)
    a, b = (mpmath.sqrt(c) - 1) ** 2, (mpmath.sqrt(c) + 1) ** 2
    return mpmath.sqrt((b - x) * (x - a)) / (2 * mpmath.pi * x) if a < x < b else mpmath.mpf(0)


def subordination_density(c, x, dps):
    """``-Im G(x + i0)/pi`` of the semicircle plus MP(c), by the subordination equation."""
    with mpmath.workdps(dps):
        c = mpmath.mpf(c)

        def g_w(w):
            disc = mpmath.sqrt((w - c + 1) ** 2 - 4 * w)
            return min((((w - c + 1) + s * disc) / (2 * w) for s in (1, -1)), key=lambda r: r.imag)

        z = mpmath.mpc(x, mpmath.mpf(1) / 100)
        g = 1 / z
        for _ in range(3000):
            g = (g + g_w(z - g)) / 2
        for eta in (mpmath.mpf(10) ** -4, mpmath.mpf(10) ** -8, 0):
            z = mpmath.mpc(x, eta)
            g = mpmath.findroot(lambda u, z=z: u - g_w(z - u), g)
        return -g.imag / mpmath.pi


def _hist_check(ck, label, d, model, expr, n, trials, seed, slack, inside):
    h = d.simulate(model, expr, n=n, trials=trials, seed=seed)
    dens = {float(x): float(v) for x, v in zip(d.x, d.density) if v is not None}
    xs = sorted(dens)
    worst = 0.0
    ok = True
    for a, b, v, se in zip(h["edges"], h["edges"][1:], h["density"], h["se"]):
        if not (inside[0] < a and b < inside[1]):
            continue
        pts = [x for x in xs if a <= x <= b]
        ref = float(np.trapezoid([dens[x] for x in pts], pts) / (pts[-1] - pts[0])) if len(pts) > 1 else dens[pts[0]]
        gap = abs(v - ref)
        ok = ok and gap <= 5 * se + slack
        worst = max(worst, gap / (5 * se + slack))
    ck.add(f"histogram n={n} ({trials} trials) == limit: {label}", "simulation", ok,
           f"worst bin gap = {worst:.2f} of its tolerance (5 se + {slack})")
    return h


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    D = digits
    # 1. Marchenko-Pastur: interior points, edges, atom
    for c, xs in (("1/2", ("0.3137", "1.61", "2.77")), ("2", ("0.5", "3.3"))):
        d = _wishart().density("Z.T*Z/n", x=list(xs), at={"c": c}, digits=D, edges=False, atoms=False)
        cq = mpmath.mpf(eval_q(c))
        for x, v in zip(xs, d.density):
            with mpmath.workdps(D + 20):
                ck.close(f"MP density c={c} x={x}", v, mp_density(cq, mpmath.mpf(x)), D)
    d = _wishart().density("Z.T*Z/n", x=[i / 8 for i in range(0, 29)], at={"c": "1/2"}, digits=D)
    (lo, hi), = d.support()
    with mpmath.workdps(D + 20):
        ck.close("MP c=1/2 lower edge (1 - 1/sqrt 2)^2", lo, (1 - 1 / mpmath.sqrt(2)) ** 2, D)
        ck.close("MP c=1/2 upper edge (1 + 1/sqrt 2)^2", hi, (1 + 1 / mpmath.sqrt(2)) ** 2, D)
        (atom,) = d.atoms()
        ck.close("MP c=1/2 atom at 0, mass 1/2", atom["mass"], mpmath.mpf(1) / 2, D)
    # 2. free convolution against the subordination solve
    m2 = _wishart(goe=True)
    for x in ("-1.31", "0.77", "2.9"):
        v = m2.density("G/sqrt(n) + Z.T*Z/n", x=[x], at={"c": "1/2"}, digits=D, edges=False, atoms=False).density[0]
        with mpmath.workdps(D + 20):
            ck.close(f"semicircle + MP density x={x} == subordination", v,
                     subordination_density(mpmath.mpf(1) / 2, mpmath.mpf(x), D + 30), D)
    # 3. histograms
    n, trials, slack = (300, 4, 0.03) if quick else (2000, 4, 0.01)
    step = 20 if quick else 200
    grid = [i / step for i in range(0, 3 * step + step // 2 + 1)]
    dmp = _wishart().density("Z.T*Z/n", x=grid[1:], at={"c": "2"}, digits=12, atoms=False)
    _hist_check(ck, "MP c=2", dmp, _wishart(), "Z.T*Z/n", n, trials, 11, slack, (0.35, 5.5))
    grid2 = [-2.5 + i / (step // 2) for i in range(0, 7 * (step // 2) + 1)]
    dfc = m2.density("G/sqrt(n) + Z.T*Z/n", x=grid2, at={"c": "1/2"}, digits=12, atoms=False)
    _hist_check(ck, "semicircle + MP c=1/2", dfc, m2, "G/sqrt(n) + Z.T*Z/n", n, trials, 12, slack, (-1.5, 3.2))
    # 4. Ginibre inside the disk
    g = Model()
    g.gaussian("Z", "n", "n")
    for gam in ("1/2", "-3/4", "2"):
        r = g.limit("trace(inv(Z/sqrt(n) + gamma*I(n)))", at={"gamma": gam}, digits=D)
        gq = mpmath.mpf(eval_q(gam))
        with mpmath.workdps(D + 20):
            ck.close(f"Ginibre tau((gamma + Z)^-1), gamma={gam}", r.value, gq if abs(gq) <= 1 else 1 / gq, D)
    rng = np.random.default_rng(2026)
    nn, tt, hh = (300, 6, 0.1) if quick else (1000, 6, 0.1)
    vals = []
    for _ in range(tt):
        z = rng.standard_normal((nn, nn)) / np.sqrt(nn)
        a = np.linalg.slogdet(z + 0.6 * np.eye(nn))[1]
        b = np.linalg.slogdet(z + 0.4 * np.eye(nn))[1]
        vals.append((a - b) / (2 * hh * nn))
    ck.statistical(f"Ginibre gamma=1/2: log-det Monte-Carlo n={nn}", np.mean(vals),
                   np.std(vals, ddof=1) / np.sqrt(tt), 0.5, 5, 10 * 1.5 / nn)
    return ck


def eval_q(text):
    """The mpf of ``"a/b"`` or ``"a"``.

    >>> float(eval_q("3/4"))
    0.75
    """
    a, _, b = str(text).partition("/")
    return mpmath.mpf(a) / (mpmath.mpf(b) if b else 1)


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
