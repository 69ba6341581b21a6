r"""Noise-only Attention (``mu = 0``, ``W = I``): the Stieltjes transform is algebraic.

Claim.  ``m = m(-gamma) = lim tr (c K S K + gamma)^{-1} / n`` is a root of a polynomial
``P(m; gamma, c, a_1, nu, d)`` obtained by eliminating the block traces of the pencil
(:mod:`symrmt.models.attention.closed_forms.noise_only`):

* ``a_1 = d = 0``: ``nu gamma^2 m^3 + nu (c - 1) gamma m^2 + c gamma m - c = 0`` (degree 3 in ``m``, 2 in ``gamma``);
* ``a_1 = 0``: a polynomial of degree 7 in ``m`` and 4 in ``gamma``, symbolic in ``gamma, c, nu, d``;
  with ``nu = 0, d = 1`` (``K = I``) it contains the Marchenko-Pastur quadratic;
* ``a_1 != 0``: degree 17 in ``m`` and 10 in ``gamma`` (irreducible over Q at the exact
  rational points checked; computed per point, symbolic in ``(m, gamma)``).  The points below are
  stored as data (:mod:`symrmt.models.attention.closed_forms.noise_only_data`): the quick mode checks that
  each stored ``P`` it uses vanishes at the general solver's ``m(-gamma)`` at three ``gamma``; the
  full mode redoes the elimination and checks that it gives the stored polynomial exactly.

The physical root is the one in the Jensen bracket ``1/(gamma + mu_1) <= m < 1/gamma``,
continued from large ``gamma``, and ``E_A = -gamma^2 dm/dgamma = gamma^2 P_gamma / P_m``.
Both agree with the general fixed-point solver to 40+ digits at 50-digit precision.
"""

from __future__ import annotations

import time

import mpmath
import numpy as np
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.latex_blocks import HERMITE, MODEL, split_equation, split_sum
from symrmt.models.attention.closed_forms import noise_only as N
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit

NAME = "noise_only"

# (c, a_1, nu, d): c < 1 and c > 1, tanh-like (a_1 + nu = 1 as for tanh), d = 0 and d = 1
QUICK_POINTS = (("1/2", "3/5", "2/5", 0), ("2", 0, "3/4", 1))
FULL_POINTS = QUICK_POINTS + (("2", "3/5", "2/5", 1), ("1/2", "1/2", "3/4", 1), ("3", 0, "1/2", 0))
#: where ``P(solver m(-gamma), gamma) = 0`` is checked (the closed-form values at fewer gamma in quick mode)
RESIDUAL_GAMMAS = ("1/10", "1", "3")


def _solver(point, gam, digits):
    cc, aa, nn, dd = point
    diag = "zero" if sp.Rational(str(dd)) == 0 else "keep"
    return attention_limit({"a1": aa, "nu": nn, "d": dd}, cc, [gam], diagonal=diag, digits=digits, details=True)[0]


def run(quick: bool = False, digits: int = 50) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    m, g, c, nu, d = S.m, S.gamma, S.c, S.nu, S.d
    timings = {}

    # 1. the a_1 = 0 families, symbolically
    t0 = time.time()
    P0 = N.a1_zero_polynomial().as_expr()
    timings["a1=0 elimination"] = time.time() - t0
    cubic = N.a1_zero_d_zero_polynomial().as_expr()
    ck.symbolic("a1 = d = 0: P = nu gamma^2 m^3 + nu (c-1) gamma m^2 + c gamma m - c",
                sp.expand(cubic - (nu * g**2 * m**3 + nu * (c - 1) * g * m**2 + c * g * m - c)))
    ck.symbolic("a1 = 0 polynomial at d = 0 contains the cubic", sp.rem(sp.expand(P0.subs(d, 0)), cubic, m))
    ck.symbolic("K = I (a1 = nu = 0, d = 1) contains the Marchenko-Pastur quadratic",
                sp.rem(sp.expand(P0.subs({nu: 0, d: 1})), sp.cancel(S.mp_quadratic()), m))
    ck.add("degree of the a1 = 0 polynomial: 7 in m, 4 in gamma", "symbolic", N.degree(None, 0) == (7, 4),
           f"{N.degree(None, 0)}")
    ck.add("degree of the a1 = d = 0 polynomial: 3 in m, 2 in gamma", "symbolic", N.degree(None, 0, None, 0) == (3, 2),
           f"{N.degree(None, 0, None, 0)}")

    # 2. structural identities used by the elimination, at a solved fixed point
    pt = _solver(("1/2", "1/2", "3/4", 1), "7/10", 30)
    with mpmath.workdps(30):
        gv = pt.block_traces
        ck.close("G_23 = gamma G_11 at the solver's fixed point", gv[4], mpmath.mpf(7) / 10 * gv[0], 25)
        sub = dict(zip(S.G_SYMBOLS, [sp.Float(str(x), 40) for x in gv]))
        sub.update({c: sp.Rational(1, 2), S.a1: sp.Rational(1, 2), nu: sp.Rational(3, 4), d: 1, g: sp.Rational(7, 10)})
        E = N.cubic_system().subs(S.G_SYMBOLS[0], m).subs(m, sub[S.G_SYMBOLS[0]]).subs(sub)
        res = max(abs(sp.N(x, 40)) for x in E)
        ck.add("cubic system vanishes at the solver's fixed point", "precision", res < sp.Float(10) ** -25,
               f"max residual {sp.N(res, 3)}")

    # 3. polynomial vs general solver, 40 digits at 50-digit precision
    points = QUICK_POINTS if quick else FULL_POINTS
    gammas = ("1",) if quick else ("1/10", "1")
    for point in points:
        t0 = time.time()
        dm, dg = N.degree(*point)
        timings[f"polynomial {point}"] = time.time() - t0
        expect = (7, 4) if sp.Rational(str(point[1])) == 0 else (17, 10)
        if sp.Rational(str(point[1])) == 0 and sp.Rational(str(point[3])) == 0:
            expect = (7, 4)  # the a1 = 0 polynomial, which contains the cubic
        ck.add(f"degree (m, gamma) at {point}", "symbolic", (dm, dg) == expect, f"({dm}, {dg})")
        P = sp.Poly(N.stieltjes_polynomial(*point), m, g)
        stored = N.stored_polynomial(*point) if sp.Rational(str(point[1])) != 0 else None
        if stored is not None and not quick:
            t0 = time.time()
            fresh = N.eliminated_polynomial(*(sp.Rational(str(x)) for x in point))
            timings[f"elimination {point}"] = time.time() - t0
            ck.add(f"elimination at {point} gives the stored polynomial", "symbolic", fresh == stored,
                   f"{len(stored.terms())} terms equal" if fresh == stored else "differs")
        sols = {}
        for gam in sorted(set(gammas) | set(RESIDUAL_GAMMAS), key=sp.Rational):
            sols[gam] = sol = _solver(point, gam, digits)
            with mpmath.workdps(digits + 10):
                mv = mpmath.mpf(sol.stieltjes)
                gm = mpmath.mpf(sp.Rational(gam).p) / sp.Rational(gam).q
                terms = [mpmath.mpf(sp.Rational(cf).p) / sp.Rational(cf).q * gm**j * mv**i
                         for (i, j), cf in P.terms()]
                rel = abs(mpmath.fsum(terms)) / mpmath.fsum(abs(t) for t in terms)
            ck.add(f"P{' (stored)' if stored is not None else ''}(solver m) = 0 at {point}, gamma={gam}",
                   "precision", rel <= mpmath.mpf(10) ** -40, f"relative residual {mpmath.nstr(rel, 3)}")
        for gam in gammas:
            sol = sols[gam]
            t0 = time.time()
            mc = N.stieltjes_closed_form_value(gam, *point, dps=digits)
            ea = N.noise_only_error(gam, *point, dps=digits)
            timings[f"closed-form value {point} gamma={gam}"] = time.time() - t0
            ck.close(f"closed-form m == solver at {point}, gamma={gam}", mc, sol.stieltjes, 40)
            ck.close(f"closed-form E_A == attention_limit at {point}, gamma={gam}", ea, sol.error, 40)

    # 4. large gamma: gamma^2 (1/gamma - m) -> mu_1 = tau(c K S K)
    point = QUICK_POINTS[0]
    mu1 = N.spectral_mean().subs({c: sp.Rational(point[0]), S.a1: sp.Rational(point[1]), nu: sp.Rational(point[2]),
                                  d: point[3]})
    big = 10**8
    mb = N.stieltjes_closed_form_value(big, *point, dps=30)
    with mpmath.workdps(30):
        ck.close(f"gamma^2 (1/gamma - m) -> mu_1 = {mu1} (gamma = 1e8)", big**2 * (mpmath.mpf(1) / big - mb),
                 mpmath.mpf(mu1.p) / mu1.q, 6)

    # 5. simulation (diagonal zero, snr 0) of an f with exactly the Hermite data of the closed-form point
    n, trials = (256, 8) if quick else (1024, 10)
    gl = [0.1, 1.0]

    def f(t):  # exactly a_1 = 3/5, nu = 9/25 + 1/25 = 2/5: the Hermite data of the closed-form point
        return 0.6 * t + 0.2 * (t * t - 1) / np.sqrt(2.0)

    sim = simulate(f, n, 0.5, gl, Geometry(), trials=trials, seed=11, progress=False)
    for i, gam in enumerate(("1/10", "1")):
        closed = N.noise_only_error(gam, "1/2", "3/5", "2/5", 0, dps=15)
        # k = 3 (two-sided 0.3% per check); slack 0.01 for finite n = 256..1024
        ck.statistical(f"closed-form E_A vs simulation of 3t/5 + (t^2-1)/(5 sqrt 2), n={n}, c=1/2, gamma={gam}",
                       sim["attention"]["mean"][i], sim["attention"]["se"][i], closed, k=3, slack=0.01)
    ck.timings = timings
    return ck


def latex(point=None) -> str:
    """``P(m) = 0``: the case in prose, then one equation (``split``) with the coefficients ``p_k`` of ``m^k``.

    ``point=None``: the symbolic ``a_1 = 0`` polynomial; otherwise ``(c, a_1, nu, d)`` exact.
    """
    P = N.a1_zero_polynomial().as_expr() if point is None else N.stieltjes_polynomial(*point)
    poly = sp.Poly(P, S.m)
    lines = [r"P(m) &= \sum_{k=0}^{%d} p_k\, m^k = 0, \quad \text{where}" % poly.degree()]
    for (k,), cf in sorted(poly.terms(), reverse=True):
        cf = sp.factor(cf)
        sums = [f for f in sp.Mul.make_args(cf) if isinstance(f, sp.Add)]
        inner = max(sums, key=lambda f: len(f.args)) if sums else None
        if inner is None or len(sp.latex(cf)) <= 56:
            lines.append(f"p_{{{k}}} &= {sp.latex(cf)}")
            continue
        outer = sp.latex(sp.cancel(cf / inner))
        outer = "" if outer == "1" else "-" if outer == "-1" else outer + " "
        chunks = split_sum(inner, 56, 64)
        lines.append(f"p_{{{k}}} &= {outer}\\bigl({chunks[0]}" + ("\\bigr)" if len(chunks) == 1 else ""))
        lines += [f"&\\qquad {ch}" + ("\\bigr)" if i == len(chunks) - 2 else "") for i, ch in enumerate(chunks[1:])]
    case = (r"the general $a_1 = 0$ case, symbolic in $\gamma, c, \nu, d$" if point is None else
            "the point $(c, a_1, \\nu, d) = (%s)$" % ", ".join(sp.latex(sp.nsimplify(x)) for x in point))
    return "\n\n".join([
        MODEL, HERMITE,
        r"Noise-only Attention: $\mu = 0$ and $W = I_p$, here " + case + r". Then "
        r"$m = m(-\gamma) = \lim \frac{1}{n} \operatorname{tr} Q(\gamma)$, the Stieltjes transform of "
        r"$K^\top X^\top X K/n$ at $-\gamma$, is the root of the polynomial $P$ below that lies in "
        r"$[1/(\gamma + \bar\lambda), 1/\gamma)$ ($\bar\lambda$ the mean of that spectrum), continued from large "
        r"$\gamma$; and $E_A(\gamma) \to -\gamma^2\, dm/d\gamma = \gamma^2 \partial_\gamma P/\partial_m P$.",
        split_equation(*lines),
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
