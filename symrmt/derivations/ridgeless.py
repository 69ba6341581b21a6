r"""Ridgeless limit ``gamma -> 0+`` of the Attention error, below and above ``c = 1``.

Claim.  ``E_A(0+) = lim gamma varphi = lim ||Pi_{ker(XK)} y||^2/n`` (the ``y``-weighted mass of
``P = K^T X^T X K/n`` at 0).

* ``c < 1``: with ``G = (alpha/gamma, rho, sigma/gamma, kappa gamma, omega, tau/gamma) + ...``
  the fixed point reduces at leading order to a ``gamma``-free algebraic system whose
  ``(3,3)`` entry is ``c + omega - 1``; with ``G_23 = gamma G_11`` this gives
  ``E_A(0+) = 1 - c`` without signal, for any ``(a_1, nu, d)``.  For ``a_1 = 0``,
  ``E_A(0+) = (1-c)(1 - s rho (c d - 2 nu rho)/((1+s) c^2))`` with ``rho`` the root of the
  cubic ``2 nu^2 rho^3 - 3 c d nu rho^2 + c(c d^2 + nu + c nu) rho - c^3 d``
  (``d = 0``: ``1 - c``).  For aligned weights ``E_A(0+)`` is an explicit rational function of the
  scaled traces, which solve the reduced system (algebraic of degree 7 in general: no radicals);
  any geometry: the Woodbury formula on the scaled traces.
* ``c > 1``: ``E_A(0+) = 0``; with ``K`` indefinite (``d = 0``) ``E_A = (beta/2) sqrt(gamma) + ...``,
  ``beta = sqrt(c/(nu (c-1)))`` when ``a_1 = d = 0``; with ``K`` definite ``E_A = O(gamma^2)``.

Checked against :func:`symrmt.theory.attention_limit` at ``gamma = 1e-12`` (``O(gamma)`` away).
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from symrmt.models.attention import equations as S
from symrmt.derivations.checklist import CheckList, derivation_main
from symrmt.models.attention.closed_forms import ridgeless as R
from symrmt.codegen.compile import compile_expr
from symrmt.latex_blocks import HERMITE, MODEL, align, fixed_point
from symrmt.models.attention.geometry import Geometry
from symrmt.models.attention.montecarlo import simulate
from symrmt.models.attention.theory import attention_limit

NAME = "ridgeless"

TANH = {"a1": "0.6057055096021588", "nu": "0.3942944903978412", "d": 1}
ALIGNED = Geometry(snr=1, wk2=1, wq2=1, wkwq=1, muwk=1, muwq=1)
GENERAL = Geometry(snr=2, wk2="9/4", wq2=1, wkwq="1/2", muwk="1/3", muwq=-1)


def _symbolic(ck: CheckList) -> None:
    M = R.reduced_system_below()
    ck.symbolic("c<1: reduced (3,3) equation is c + omega - 1 (so omega = 1 - c)", M[2, 2] - (S.c + R.omega - 1))
    # a1 = 0: the explicit traces solve all nine reduced equations modulo the cubic
    tr = R.a1_zero_traces()
    sub = dict(zip(R.BELOW, tr))
    cub = sp.Poly(R.a1_zero_cubic(), R.rho)
    worst = 0
    for i in range(3):
        for j in range(3):
            num = sp.numer(sp.together(M[i, j].subs(S.a1, 0).subs(sub)))
            rem = sp.Poly(num, R.rho).rem(cub) if num != 0 else sp.Integer(0)
            if sp.expand(rem.as_expr() if hasattr(rem, "as_expr") else rem) != 0:
                worst += 1
    ck.add("a1=0: traces(rho) solve the 9 reduced equations mod the cubic", "symbolic", worst == 0,
           f"{worst} equations with a nonzero remainder")
    sub0 = dict(zip(R.BELOW, R.a1_zero_traces_d_zero()))
    ck.symbolic("a1=d=0: rho=sigma=0, kappa=-c^2/((1-c)nu), tau=(1-c)^2 nu/c solve the reduced system",
                sum(sp.together(M[i, j].subs({S.a1: 0, S.d: 0}).subs(sub0)) ** 2 for i in range(3) for j in range(3)))
    ck.symbolic("a1=0: lim gamma varphi = alpha - s sigma^2/((1+s) tau)",
                R.a1_zero_ridgeless_error_in_traces() - (R.alpha - S.snr * R.sigma**2 / ((1 + S.snr) * R.tau)))
    ck.symbolic("a1=0: E_A(0+) = (1-c)(1 - s rho (c d - 2 nu rho)/((1+s) c^2))",
                R.a1_zero_ridgeless_error_in_traces().subs(sub) - R.a1_zero_error())
    Eal = R.aligned_ridgeless_error()
    ck.symbolic("aligned, snr=0: E_A(0+) = alpha", Eal.subs(S.snr, 0) - R.alpha)
    ck.symbolic("aligned, a1=0: reduces to the a1=0 form", Eal.subs(S.a1, 0) - R.a1_zero_ridgeless_error_in_traces())
    A = R.reduced_system_above()
    ck.symbolic("c>1: reduced (3,3) equation has the factor c tau - tau - 1 (tau = 1/(c-1))",
                sp.rem(sp.numer(sp.together(A[2, 2])), S.c * R.tau - R.tau - 1, R.tau))
    b = sp.sqrt(S.c / (S.nu * (S.c - 1)))
    subA = {R.beta: b, R.rho: 0, R.sigma: 0, R.kappa: -b * (S.c - 1), R.tau: 1 / (S.c - 1)}
    ck.symbolic("c>1, a1=d=0: beta = sqrt(c/(nu(c-1))), kappa = -beta (c-1), rho = sigma = 0 solve it",
                sum(sp.simplify(A[i, j].subs({S.a1: 0, S.d: 0}).subs(subA)) ** 2 for i in range(3) for j in range(3)))


def run(quick: bool = False, digits: int = 30) -> CheckList:
    """Run this derivation's checks (``quick``: a seconds-long run with smaller simulations) and return
    its :class:`~symrmt.derivations.checklist.CheckList`; a failed check is recorded there, not raised."""
    ck = CheckList(NAME)
    _symbolic(ck)
    g = "1e-12"
    gam = mpmath.mpf(g)
    # E = -gamma^2 d(varphi)/d(gamma) with varphi = E0/gamma + v0 + v1 gamma + ...: E - E0 = O(gamma^2)
    # (measured ~21 digits at gamma = 1e-12); the traces themselves are O(gamma) away (~12 digits)
    agree = 15
    agree_tr = 9
    # ---- c < 1, noise only: 1 - c for every (a1, nu, d)
    cases = [("tanh, zero diagonal", TANH, "1/2", "zero"), ("tanh, kept diagonal (d=1)", TANH, "1/2", "keep"),
             ("a1 = d (e = 0)", {"a1": "3/5", "nu": "1/2", "d": "3/5"}, "1/4", "keep")]
    if quick:
        cases = cases[:1]
    for label, f, c, diag in cases:
        p = attention_limit(f, c, [g], Geometry(), diagonal=diag, digits=digits, details=True)[0]
        ck.close(f"c={c}, {label}, mu=0: E_A(1e-12) == 1 - c", p.error, 1 - mpmath.mpf(sp.Rational(c)), agree)
        G = p.block_traces
        ck.close(f"c={c}, {label}: G23 == gamma G11 (so alpha = omega)", G[4], gam * G[0], agree)
    # ---- a1 = 0, d = 1 (centered |t|, kept diagonal), with signal: the cubic
    with mpmath.workdps(digits + 20):
        nu = 1 - 2 / mpmath.pi
        cub = compile_expr([R.rho, S.c, S.nu, S.d], R.a1_zero_cubic(), cse=False, floats_ok=True)
        r = mpmath.findroot(lambda x: cub(x, mpmath.mpf(1) / 2, nu, 1), mpmath.mpf("0.3"))
        Ef = compile_expr([R.rho, S.c, S.nu, S.d, S.snr], R.a1_zero_error(), cse=False, floats_ok=True)
        e0 = Ef(r, mpmath.mpf(1) / 2, nu, 1, 1)
    absf = {"a1": 0, "nu": nu, "d": 1}
    p = attention_limit(absf, "1/2", [g], Geometry(snr=1), diagonal="keep", digits=digits, details=True)[0]
    ck.close("a1=0, d=1 (centered |t|), snr=1: E_A(1e-12) == cubic closed form", p.error, e0, agree)
    ck.close("a1=0, d=1: lim G12 == root of the cubic", p.block_traces[1], r, agree_tr)
    # ---- aligned (tanh) and general geometry: scaled traces from the reduced system
    tr, res = R.ridgeless_traces("1/2", TANH["a1"], TANH["nu"], 0, dps=digits + 10)
    ck.add("tanh c=1/2: reduced system solved (all 9 residuals)", "precision", res < mpmath.mpf(10) ** (-digits),
           f"max residual {mpmath.nstr(res, 3)}")
    e_al = R.evaluate(R.aligned_ridgeless_error(), tr, "1/2", TANH["a1"], TANH["nu"], 0, snr=1, wkwq=1, dps=digits)
    p = attention_limit(TANH, "1/2", [g], ALIGNED, digits=digits, details=True)[0]
    ck.close("tanh c=1/2 aligned (w_K=w_Q=mu, snr=1): E_A(1e-12) == ridgeless formula", p.error, e_al, agree)
    G = p.block_traces
    scaled = (gam * G[0], G[1], gam * G[2], G[3] / gam, G[4], gam * G[5])
    worst = max(abs(a - b) for a, b in zip(scaled, tr))
    ck.add("tanh c=1/2: (gamma G11, G12, gamma G13, G22/gamma, G23, gamma G33) -> reduced-system traces",
           "precision", worst < mpmath.mpf(10) ** (-agree_tr), f"max gap {mpmath.nstr(worst, 3)} at gamma=1e-12")
    if not quick:
        e_g, spread = R.general_ridgeless_error(tr, "1/2", TANH["a1"], GENERAL, dps=digits)
        p = attention_limit(TANH, "1/2", [g], GENERAL, digits=digits, route="general")[0]
        ck.close("tanh c=1/2 general geometry: E_A(1e-12) == Woodbury on scaled traces", p, e_g, agree)
        e_a2, _ = R.general_ridgeless_error(tr, "1/2", TANH["a1"], ALIGNED, dps=digits)
        ck.close("aligned: general Woodbury limit == aligned rational form", e_a2, e_al, digits - 5)
    # ---- c > 1
    pts = attention_limit(TANH, "2", ["1e-10", g], Geometry(), digits=15)
    beta, *_ = R.rate_above("2", TANH["a1"], TANH["nu"], 0)
    ck.close("c=2 tanh zero diagonal: E_A/sqrt(gamma) -> beta/2 (reduced system), gamma=1e-12",
             pts[1] / mpmath.sqrt(gam), beta / 2, 5)
    ck.add("c=2 tanh zero diagonal: E_A ~ sqrt(gamma) (ratio over two decades of gamma = 10)", "precision",
           abs(pts[0] / pts[1] - 10) < 1e-3, f"E(1e-10)/E(1e-12) = {mpmath.nstr(pts[0] / pts[1], 8)}")
    if quick:  # the remaining c > 1 checks each need their own continuation down to gamma = 1e-12
        return _simulation(ck, quick, e_al)
    cosf = {"a1": 0, "nu": (1 + mpmath.e**-2) / 2 - mpmath.e**-1}
    ec = attention_limit(cosf, "2", [g], Geometry(), digits=15)[0]
    with mpmath.workdps(30):
        rate = compile_expr([S.c, S.nu], R.rate_above_a1_d_zero(), cse=False, floats_ok=True)(mpmath.mpf(2), cosf["nu"])
    ck.close("c=2 centered cos (a1=d=0): E_A/sqrt(gamma) -> sqrt(c/(nu(c-1)))/2", ec / mpmath.sqrt(gam), rate, 5)
    es = attention_limit(TANH, "2", [g], ALIGNED, digits=15)[0]
    ck.add("c=2 tanh aligned signal: E_A(1e-12) -> 0 (below 1e-5)", "precision", 0 <= es < 1e-5,
           f"E_A = {mpmath.nstr(es, 5)}")
    ek = attention_limit(TANH, "2", ["1e-6"], Geometry(), diagonal="keep", digits=15)[0]
    ck.add("c=2 tanh kept diagonal (K definite): E_A = O(gamma^2)", "precision", ek < 1e-10,
           f"E_A(1e-6) = {mpmath.nstr(ek, 5)}")
    return _simulation(ck, quick, e_al)


def _simulation(ck, quick, e_al):
    """c = 1/2, gamma = 1e-6: the simulation against the ridgeless limit."""
    n, trials = (256, 4) if quick else (512, 8)
    sim = simulate(np.tanh, n, 0.5, [1e-6], ALIGNED, trials=trials, seed=3, progress=False)
    ck.statistical(f"tanh c=1/2 aligned, gamma=1e-6, n={n}: simulation vs E_A(0+)", sim["attention"]["mean"][0],
                   sim["attention"]["se"][0], e_al, k=3, slack=0.01)
    return ck


def latex() -> str:
    """This derivation's result as LaTeX."""
    return "\n\n".join([
        MODEL, HERMITE,
        r"Ridgeless limit $\gamma \to 0^+$, with $\varphi = \lim \frac{1}{n} y^\top Q y$ and $\|\mu\|^2 = s$.",
        fixed_point(),
        r"Below the threshold, $c < 1$, the six entries of $G$ $(G_{11}, G_{12}, G_{13}, G_{22}, G_{23}, G_{33})$ "
        r"scale as $\gamma \to 0^+$ like",
        align(r"(G_{11}, G_{12}, G_{13}, G_{22}, G_{23}, G_{33}) &\simeq "
              r"\Bigl(\tfrac{\alpha}{\gamma}, \rho, \tfrac{\sigma}{\gamma}, \kappa\gamma, \omega, "
              r"\tfrac{\tau}{\gamma}\Bigr), \qquad \omega = \alpha = 1 - c"),
        r"with $\alpha, \rho, \sigma, \kappa, \omega, \tau$ free of $\gamma$. Then, with $\rho$ for "
        r"$a_1 = 0$ the physical root of the cubic $\eqref{eq:ridgeless-cubic}$ (the only real one when "
        r"$c d^2 < 2 \nu (1 + c)$),",
        align(r"E_A(0^+) &= \lim_{\gamma\to0}\gamma\varphi \qquad (c < 1)",
              r"E_A(0^+) &= 1 - c \qquad (c < 1,\ \mu = 0)",
              r"E_A(0^+) &= " + sp.latex(R.a1_zero_error().subs(S.snr, sp.Symbol("s"))) + r" \qquad (c < 1,\ a_1 = 0)",
              r"0 &= " + sp.latex(R.a1_zero_cubic()) + r" \label{eq:ridgeless-cubic}",
              r"E_A(0^+) &= 0 \qquad (c > 1)",
              r"E_A(\gamma) &\simeq " + sp.latex(R.rate_above_a1_d_zero()) + r"\sqrt{\gamma} \qquad "
              r"(c > 1,\ a_1 = d = 0,\ \gamma \to 0^+)"),
    ]) + "\n"


def main(argv=None) -> int:
    """``python -m symrmt.derivations.<name> [--quick] [--digits D]``: run the checks, print their table;
    returns 0, and raises ``AssertionError`` naming the checks that fail."""
    return derivation_main(NAME, run, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
